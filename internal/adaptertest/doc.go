// Package adaptertest is the test suite the framework adapters (ginlimit, echolimit,
// fiberlimit) share, and that httplimit itself passes on net/http: the reference they are
// held to. Each adapter mounts its middleware in a small app of its framework and hands
// the suite that app as an http.Handler; the suite checks, through net/http alone, what a
// client sees: status, rate-limit headers, the 429 body, keys by address (an IPv6 client
// by its /64) and by header, cost, the failure policy, wait mode, and (Adapter.Flushes)
// that the error handler's writer flushes and hijacks as the framework's does. The
// adapters' nested modules import it through the module replace (the internal rule is by
// path), so the core module never imports a framework.
package adaptertest
