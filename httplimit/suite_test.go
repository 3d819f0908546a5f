package httplimit_test

import (
	"net/http"
	"testing"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/adaptertest"
)

// TestAdapterSuite runs the framework adapters' suite on net/http itself, the reference
// the adapters (ginlimit, echolimit, fiberlimit) are held to.
func TestAdapterSuite(t *testing.T) {
	t.Parallel()
	mount := func(_ testing.TB, l *limiter.Limiter, key httplimit.KeyFunc, opts []httplimit.Option, n *adaptertest.Counts) (http.Handler, error) {
		mw, err := httplimit.Middleware(l, key, opts...)
		if err != nil {
			return nil, err
		}
		mux := http.NewServeMux()
		ok := func(w http.ResponseWriter, r *http.Request) {
			n.Handler.Add(1)
			status, usage := adaptertest.Answer(r.Header.Get)
			if usage != "" {
				w.Header().Set("X-Usage-Tokens", usage)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte("ok"))
		}
		mux.HandleFunc("GET /", ok)
		mux.HandleFunc("POST /", ok)
		after := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.After.Add(1); mux.ServeHTTP(w, r) })
		return mw(after), nil
	}
	adaptertest.Run(t, adaptertest.Adapter{Mount: mount})
}
