package httplimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// statusWriter records the status the handler wrote. The handler gets it through wrap,
// which adds the optional interfaces of the underlying writer.
type statusWriter struct {
	http.ResponseWriter
	status   int
	hijacked bool // the handler took the connection over: its latency says nothing of the server
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // 1xx are interim
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote()
	return w.ResponseWriter.Write(b)
}

// wrote records the implicit 200 of a body written, or flushed, before any status.
func (w *statusWriter) wrote() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
}

// Unwrap lets http.ResponseController reach the underlying writer (deadlines, full
// duplex, and the optional interfaces below for writers that wrap it again).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wrap returns w as the handler sees it: of http.Flusher, http.Hijacker and io.ReaderFrom
// it has exactly the ones the underlying writer has, so that a type assertion finds what
// it would find without the middleware (a WebSocket upgrade asserts Hijacker, io.Copy
// uses ReaderFrom to send a file with sendfile). An interface the underlying writer lacks
// is not faked: a handler that checks for it takes its fallback.
func (w *statusWriter) wrap() http.ResponseWriter {
	_, f := w.ResponseWriter.(http.Flusher)
	_, h := w.ResponseWriter.(http.Hijacker)
	_, r := w.ResponseWriter.(io.ReaderFrom)
	type (
		F = http.Flusher
		H = http.Hijacker
		R = io.ReaderFrom
	)
	switch {
	case f && h && r:
		return struct {
			*statusWriter
			F
			H
			R
		}{w, flusher{w}, hijacker{w}, readerFrom{w}}
	case f && h:
		return struct {
			*statusWriter
			F
			H
		}{w, flusher{w}, hijacker{w}}
	case f && r:
		return struct {
			*statusWriter
			F
			R
		}{w, flusher{w}, readerFrom{w}}
	case h && r:
		return struct {
			*statusWriter
			H
			R
		}{w, hijacker{w}, readerFrom{w}}
	case f:
		return struct {
			*statusWriter
			F
		}{w, flusher{w}}
	case h:
		return struct {
			*statusWriter
			H
		}{w, hijacker{w}}
	case r:
		return struct {
			*statusWriter
			R
		}{w, readerFrom{w}}
	}
	return w
}

// flusher, hijacker and readerFrom pass one optional interface on to the underlying
// writer, which wrap has checked has it.
type (
	flusher    struct{ w *statusWriter }
	hijacker   struct{ w *statusWriter }
	readerFrom struct{ w *statusWriter }
)

// Flush sends the header (200 unless one was written) and what the body has so far.
func (f flusher) Flush() {
	f.w.wrote()
	f.w.ResponseWriter.(http.Flusher).Flush()
}

// Hijack hands the connection over. A hijacked request (a WebSocket, say) may hold it for
// hours, so it is recorded as such and reported as adaptive.Ignore.
func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := h.w.ResponseWriter.(http.Hijacker).Hijack()
	if err == nil {
		h.w.hijacked = true
	}
	return c, rw, err
}

func (r readerFrom) ReadFrom(src io.Reader) (int64, error) {
	r.w.wrote()
	return r.w.ResponseWriter.(io.ReaderFrom).ReadFrom(src)
}
