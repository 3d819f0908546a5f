package server

import (
	"io"
	"net/http"
	"sync/atomic"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// maxJSONBody bounds the body /json reads: a request of a few descriptors is well under
// a kilobyte.
const maxJSONBody = 1 << 20

// HTTP serves envoyproxy/ratelimit's HTTP port: /json (ShouldRateLimit in the proto3 JSON
// mapping), /healthcheck and /metrics (Prometheus text).
type HTTP struct {
	svc      *Service
	draining atomic.Bool
}

// NewHTTP returns the HTTP endpoints of svc.
func NewHTTP(svc *Service) *HTTP { return &HTTP{svc: svc} }

// Drain makes /healthcheck answer 500 from now on, as envoyproxy/ratelimit does after
// SIGTERM, so that load balancers stop sending work while calls in flight finish.
func (h *HTTP) Drain() { h.draining.Store(true) }

// Handler returns the mux of the three endpoints.
func (h *HTTP) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/json", h.json)
	mux.HandleFunc("/healthcheck", h.health)
	mux.HandleFunc("/metrics", h.metrics)
	return mux
}

// json takes a POSTed RateLimitRequest and answers the RateLimitResponse, with status
// 200 when the overall code is OK and 429 when it is OVER_LIMIT.
func (h *HTTP) json(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a RateLimitRequest as JSON", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
	if err != nil || len(body) > maxJSONBody {
		http.Error(w, "cannot read the body (at most 1 MiB)", http.StatusBadRequest)
		return
	}
	var req rlsv3.RateLimitRequest
	if err := protojson.Unmarshal(body, &req); err != nil {
		http.Error(w, "bad RateLimitRequest JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := h.svc.ShouldRateLimit(r.Context(), &req)
	if err != nil {
		code := http.StatusInternalServerError
		switch status.Code(err) {
		case codes.InvalidArgument:
			code = http.StatusBadRequest
		case codes.Unavailable:
			code = http.StatusServiceUnavailable
		}
		http.Error(w, status.Convert(err).Message(), code)
		return
	}
	out, err := protojson.Marshal(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if resp.GetOverallCode() == rlsv3.RateLimitResponse_OVER_LIMIT {
		w.WriteHeader(http.StatusTooManyRequests)
	}
	w.Write(out)
}

func (h *HTTP) health(w http.ResponseWriter, _ *http.Request) {
	if h.draining.Load() {
		http.Error(w, "draining", http.StatusInternalServerError)
		return
	}
	io.WriteString(w, "OK\n")
}

func (h *HTTP) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	h.svc.metrics.WriteTo(w)
}
