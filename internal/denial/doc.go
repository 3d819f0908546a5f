// Package denial remembers what a store answered when it denied a request, so that the
// same request can be denied again without asking the store until the denial's
// RetryAfter has passed: the distributed store's denial cache and the leasing store's
// memory of a quota's tail share it. A denial of the algorithms of package algo writes
// nothing, and a grant only pushes the same request's RetryAfter later, so the answer is
// exact until something other than a grant (a Refund, a Reset, a rate change) frees
// permits early: a late admission then, never an over-admission.
package denial
