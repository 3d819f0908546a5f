package fiberlimit_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/fiberlimit"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/adaptertest"
)

// upload is a request body of size zero bytes made on demand, counting what was read.
type upload struct{ size, read int }

func (u *upload) Read(p []byte) (int, error) {
	if u.read == u.size {
		return 0, io.EOF
	}
	n := min(len(p), u.size-u.read)
	clear(p[:n])
	u.read += n
	return n, nil
}

// post serves a streamed POST of body through app as fasthttp's server would with
// StreamRequestBody: the body is a stream the handlers read, or not.
func post(app *fiber.App, apiKey string, body *upload) *fasthttp.RequestCtx {
	ctx := new(fasthttp.RequestCtx)
	ctx.Init(new(fasthttp.Request), &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}, nil)
	ctx.Request.Header.SetMethod(fiber.MethodPost)
	ctx.Request.SetRequestURI("/upload")
	ctx.Request.Header.Set("X-API-Key", apiKey)
	ctx.Request.SetBodyStream(body, body.size) // after Init, whose copy of a request drops its stream
	app.Handler()(ctx)
	return ctx
}

// TestStreamedBodyUntouched (issue 35.6): the middleware does not read the request body.
// A handler after it that streams (StreamRequestBody) gets the whole stream, and a denied
// 16 MiB upload is answered without reading a byte of it, for a few KiB of allocations.
// Before, the middleware copied the body on every request (reading a stream in full): the
// handler got no stream and a denied upload cost twice its size in allocations. A cost
// function that reads the body still gets it.
func TestStreamedBodyUntouched(t *testing.T) {
	const size = 16 << 20
	l, _ := adaptertest.NewLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	key, err := httplimit.ByHeader("X-API-Key")
	if err != nil {
		t.Fatal(err)
	}
	mw, err := fiberlimit.Middleware(l, key)
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{StreamRequestBody: true})
	var streamed int64
	app.Post("/upload", mw, func(c *fiber.Ctx) error {
		s := c.Context().RequestBodyStream()
		if s == nil {
			return c.Status(http.StatusTeapot).SendString("no stream")
		}
		streamed, err = io.Copy(io.Discard, s)
		return err
	})

	body := &upload{size: size}
	if ctx := post(app, "a", body); ctx.Response.StatusCode() != http.StatusOK {
		t.Errorf("allowed upload: %d %q", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if streamed != size || body.read != size {
		t.Errorf("allowed upload: the handler streamed %d bytes of %d (read from the client: %d)", streamed, size, body.read)
	}

	body = &upload{size: size}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ctx := post(app, "a", body)
	runtime.ReadMemStats(&after)
	if ctx.Response.StatusCode() != http.StatusTooManyRequests {
		t.Fatalf("second upload: %d %q, want 429", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if body.read != 0 {
		t.Errorf("denied upload: %d bytes of it read, want none", body.read)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("denied upload: %d bytes allocated, want under 1 MiB", alloc)
	} else {
		t.Logf("denied upload of %d bytes: %d bytes allocated", size, alloc)
	}

	// A cost function that reads the body gets it, as on net/http.
	var costRead int64
	mw, err = fiberlimit.Middleware(l, key, httplimit.WithCost(func(r *http.Request) int64 {
		costRead, _ = io.Copy(io.Discard, r.Body)
		return 1
	}))
	if err != nil {
		t.Fatal(err)
	}
	app = fiber.New()
	app.Post("/upload", mw, func(c *fiber.Ctx) error { return c.SendString(string(c.Body()[:3])) })
	req := httptest.NewRequest(http.MethodPost, "/upload", strings.NewReader("abcdef"))
	req.Header.Set("X-API-Key", "b")
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || costRead != 6 || string(got) != "abc" {
		t.Errorf("a cost function reading the body: status %d, it read %d bytes, the handler %q; want 200, 6, \"abc\"", resp.StatusCode, costRead, got)
	}
}
