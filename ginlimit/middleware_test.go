package ginlimit_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/ratekit/limiter"
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
	ok := func(c *gin.Context) {
		n.Handler.Add(1)
		status, usage := adaptertest.Answer(c.GetHeader)
		if usage != "" {
			c.Header("X-Usage-Tokens", usage)
		}
		c.String(status, "ok")
	}
	e.GET("/", ok)
	e.POST("/", ok)
	return e, nil
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, adaptertest.Adapter{Mount: mount, Flushes: true})
}

// BenchmarkMiddleware: what a request through the middleware costs (adaptertest.Benchmark).
func BenchmarkMiddleware(b *testing.B) {
	adaptertest.Benchmark(b, adaptertest.Adapter{Mount: mount})
}
