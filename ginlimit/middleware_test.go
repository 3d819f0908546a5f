package ginlimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/ginlimit"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/adaptertest"
)

func init() { gin.SetMode(gin.TestMode) }

// mount is adaptertest.Mount for gin: a gin engine with the middleware, the counting
// middleware after it, and GET / and POST /.
func mount(_ testing.TB, l *limiter.Limiter, key httplimit.KeyFunc, opts []httplimit.Option, n *adaptertest.Counts) (http.Handler, error) {
	mw, err := ginlimit.Middleware(l, key, opts...)
	if err != nil {
		return nil, err
	}
	e := gin.New()
	e.Use(mw, func(c *gin.Context) { n.After.Add(1); c.Next() })
	ok := func(c *gin.Context) { n.Handler.Add(1); c.String(http.StatusOK, "ok") }
	e.GET("/", ok)
	e.POST("/", ok)
	return e, nil
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, adaptertest.Adapter{Mount: mount})
}

// BenchmarkMiddleware: what a request through the middleware costs (adaptertest.Benchmark).
func BenchmarkMiddleware(b *testing.B) {
	adaptertest.Benchmark(b, adaptertest.Adapter{Mount: mount})
}

// The writer a denied-request or error handler gets is still gin's as far as it can tell:
// it flushes and hijacks as c.Writer does.
func TestHandlersGetAFlushingWriter(t *testing.T) {
	t.Parallel()
	l, _ := adaptertest.NewLimiter(t, algo.FixedWindow{Limit: 2, Window: time.Minute})
	var flusher, hijacker bool
	key := func(*http.Request) (string, error) { return "", errors.New("no key") }
	h, err := mount(t, l, key, []httplimit.Option{httplimit.WithErrorHandler(func(w http.ResponseWriter, _ *http.Request, _ error) {
		_, flusher = w.(http.Flusher)
		_, hijacker = w.(http.Hijacker)
		w.WriteHeader(http.StatusTeapot)
	})}, new(adaptertest.Counts))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusTeapot || !flusher || !hijacker {
		t.Errorf("status %d, Flusher %v, Hijacker %v; want 418, true, true", rec.Code, flusher, hijacker)
	}
}
