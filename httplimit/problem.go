package httplimit

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// problemQuotaExceeded is the problem type of the draft's Section 5.1.
const problemQuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// problem is the quota-exceeded problem document (RFC 9457 members, in their order).
type problem struct {
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Violated []string `json:"violated-policies,omitempty"`
}

// writeProblem answers 429 with a quota-exceeded problem document naming the violated
// policies (WithProblemDetails).
func writeProblem(w http.ResponseWriter, violated []string) {
	body, err := json.Marshal(problem{
		Type:     problemQuotaExceeded,
		Title:    http.StatusText(http.StatusTooManyRequests),
		Status:   http.StatusTooManyRequests,
		Violated: violated,
	})
	if err != nil { // strings and an int always marshal; kept for safety
		tooManyRequests(w, nil)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}
