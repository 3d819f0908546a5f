package httplimit_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/httplimit"
)

// recWriter is a ResponseWriter without any optional interface; the types below add one
// each. Every call is recorded.
type recWriter struct {
	header http.Header
	calls  []string
}

func (w *recWriter) Header() http.Header { return w.header }
func (w *recWriter) Write(b []byte) (int, error) {
	w.calls = append(w.calls, "write")
	return len(b), nil
}
func (w *recWriter) WriteHeader(int) { w.calls = append(w.calls, "header") }

type flushWriter struct{ *recWriter }

func (w flushWriter) Flush() { w.calls = append(w.calls, "flush") }

type hijackWriter struct{ *recWriter }

func (w hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.calls = append(w.calls, "hijack")
	return nil, nil, nil
}

type readFromWriter struct{ *recWriter }

func (w readFromWriter) ReadFrom(src io.Reader) (int64, error) {
	w.calls = append(w.calls, "readfrom")
	return io.Copy(io.Discard, src)
}

// TestConcurrencyWriterInterfaces: the handler behind Concurrency finds exactly the
// optional interfaces the server's writer has, and each reaches it. Flushing or sending
// a body by ReadFrom commits the status 200, which the outcome then sees.
func TestConcurrencyWriterInterfaces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		mk         func(*recWriter) http.ResponseWriter
		want       string // the calls that reach the writer
		wantStatus int    // 0: the outcome function is not asked (a hijacked request is Ignore)
	}{
		{"plain", func(r *recWriter) http.ResponseWriter { return r }, "header", 503},
		{"flusher", func(r *recWriter) http.ResponseWriter { return flushWriter{r} }, "flush header", 200},
		{"hijacker", func(r *recWriter) http.ResponseWriter { return hijackWriter{r} }, "hijack header", 0},
		{"reader from", func(r *recWriter) http.ResponseWriter { return readFromWriter{r} }, "readfrom header", 200},
		{"HTTP/1", func(r *recWriter) http.ResponseWriter {
			return struct {
				*recWriter
				flushWriter
				hijackWriter
				readFromWriter
			}{r, flushWriter{r}, hijackWriter{r}, readFromWriter{r}}
		}, "flush hijack readfrom header", 0},
		{"HTTP/2", func(r *recWriter) http.ResponseWriter {
			return struct {
				*recWriter
				flushWriter
			}{r, flushWriter{r}}
		}, "flush header", 200},
	} {
		l, _ := newAdaptive(t, adaptive.Fixed{Limit: 1})
		status := 0
		h := mustConcurrency(t, l, httplimit.ConcurrencyOutcome(func(_ *http.Request, s int) adaptive.Outcome {
			status = s
			return adaptive.Success
		}))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			if hj, ok := w.(http.Hijacker); ok {
				_, _, _ = hj.Hijack()
			}
			if rf, ok := w.(io.ReaderFrom); ok {
				_, _ = rf.ReadFrom(strings.NewReader("body"))
			}
			w.WriteHeader(http.StatusServiceUnavailable) // too late after a flush or a body
		}))
		rec := &recWriter{header: http.Header{}}
		h.ServeHTTP(tc.mk(rec), httptest.NewRequest(http.MethodGet, "/", nil))
		if got := strings.Join(rec.calls, " "); got != tc.want {
			t.Errorf("%s: the writer got %q, want %q", tc.name, got, tc.want)
		}
		if status != tc.wantStatus {
			t.Errorf("%s: the outcome saw the status %d, want %d", tc.name, status, tc.wantStatus)
		}
	}
}

// TestConcurrencyHijack: a handler behind Concurrency on a real server can take the
// connection over, as a WebSocket upgrade does.
func TestConcurrencyHijack(t *testing.T) {
	t.Parallel()
	l, _ := newAdaptive(t, adaptive.Fixed{Limit: 1})
	srv := httptest.NewServer(mustConcurrency(t, l)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			http.Error(w, "no Hijacker", http.StatusInternalServerError)
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		_ = buf.Flush()
	})))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || string(body) != "hijacked" {
		t.Fatalf("got %d %q, want 200 %q", resp.StatusCode, body, "hijacked")
	}
}
