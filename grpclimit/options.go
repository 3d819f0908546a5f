package grpclimit

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/clientip"
	"github.com/ratekit/limiter/store"
)

// Option configures New. A nil Option is ignored; an Option given a value it cannot use
// (a nil function) makes New return an error wrapping algo.ErrInvalidConfig that names
// it.
type Option interface {
	apply(*options)
}

type options struct {
	key     KeyFunc
	skip    map[string]bool
	cost    func(ctx context.Context, fullMethod string) int64
	onError func(ctx context.Context, fullMethod string, err error) error

	noMetadata bool  // WithoutMetadata
	err        error // the first invalid option
}

// invalid records the first invalid option.
func (o *options) invalid(what string) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: grpclimit.New: %s", algo.ErrInvalidConfig, what)
	}
}

func defaultOptions() options {
	return options{key: byPeer(clientip.DefaultV6Bits), onError: DefaultErrorHandler}
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithKey sets the KeyFunc that computes a call's key: ByPeer, ByMetadata or one of your
// own, for example one that reads the authenticated user an earlier interceptor put in
// the context. The default is ByPeer() (IPv6 peers keyed by their /64); a nil key is an
// error (leave the option out for the default), so that the KeyFunc of a failed
// ByMetadata (or ByPeer) cannot silently become ByPeer.
func WithKey(key KeyFunc) Option {
	return optionFunc(func(o *options) {
		if key == nil {
			o.invalid("WithKey(nil): the KeyFunc is nil")
			return
		}
		o.key = key
	})
}

// WithSkipMethods exempts calls to the given full method names (as in
// grpc.UnaryServerInfo.FullMethod, "/package.Service/Method"), for example health checks
// ("/grpc.health.v1.Health/Check" and "/grpc.health.v1.Health/Watch") or reflection: they
// are served without computing a key or consulting the limiter. Names must match exactly;
// several calls add up. The default is to skip nothing. To exempt by any other rule (a
// whole service, a metadata flag), return 0 from WithCost.
func WithSkipMethods(fullMethods ...string) Option {
	return optionFunc(func(o *options) {
		for _, m := range fullMethods {
			if o.skip == nil {
				o.skip = make(map[string]bool, len(fullMethods))
			}
			o.skip[m] = true
		}
	})
}

// WithCost sets how many permits a call takes, for example more for an expensive method.
// f gets the call's context and full method name. The default is 1 per call (and per
// stream: a stream is limited once, when it opens, not per message); a nil f is an error
// (leave the option out for the default).
//
// A cost of 0 exempts the call: it is served without consulting the limiter. A negative
// cost is a bug in f: the call goes to the error handler with an error wrapping
// algo.ErrInvalidRequest (codes.Internal by default). A cost larger than the limit can
// ever grant is denied with codes.ResourceExhausted and no RetryInfo, since waiting would
// not help. The key is computed before the cost, so a call whose key fails is answered by
// the error handler whatever its cost.
func WithCost(f func(ctx context.Context, fullMethod string) int64) Option {
	return optionFunc(func(o *options) {
		if f == nil {
			o.invalid("WithCost(nil): the cost function is nil")
			return
		}
		o.cost = f
	})
}

// WithErrorHandler sets the function that answers a call the interceptor cannot decide
// on: its KeyFunc failed, WithCost returned a negative cost, the store is unavailable and
// the limiter's failure policy is FailClosed, the store is closed, the call's context
// ended, or the limiter returned another error. It returns the error the client gets,
// normally a status error (status.Error); a nil return serves the call after all. The
// default is DefaultErrorHandler; a nil f is an error (leave the option out for the
// default).
//
// Store failures that the failure policy answers with an allowed decision (FailOpen,
// Fallback) never reach this function: the call is served. Count them with the limiter's
// own limiter.WithErrorHandler.
func WithErrorHandler(f func(ctx context.Context, fullMethod string, err error) error) Option {
	return optionFunc(func(o *options) {
		if f == nil {
			o.invalid("WithErrorHandler(nil): the function is nil")
			return
		}
		o.onError = f
	})
}

// DefaultErrorHandler is the error handler the interceptors use unless WithErrorHandler
// sets another. It answers with a status whose message is fixed, never the error's text
// (which may name keys, addresses or backends):
//
//   - codes.InvalidArgument when err wraps httplimit.ErrMissingKey (the client sent no key, such as
//     missing metadata for ByMetadata);
//   - codes.Unavailable when err wraps store.ErrUnavailable (the store is down and the
//     failure policy is FailClosed) or store.ErrClosed (the store was closed, as during a
//     shutdown): a client may retry, on another replica or later;
//   - codes.Canceled or codes.DeadlineExceeded when the call's context ended;
//   - codes.Internal otherwise: a KeyFunc that cannot compute a key from a call the client
//     could not have got wrong (ByPeer on a Unix socket), a negative cost, a limiter that
//     reports algo.ErrInvalidConfig (a zero limiter.Limiter). These are the server's
//     bugs, which no retry and no change of system state will fix.
func DefaultErrorHandler(ctx context.Context, fullMethod string, err error) error {
	switch {
	case errors.Is(err, httplimit.ErrMissingKey):
		return status.Error(codes.InvalidArgument, "grpclimit: call has no rate-limit key")
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrClosed):
		return status.Error(codes.Unavailable, "grpclimit: rate limiter unavailable")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "grpclimit: call canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "grpclimit: deadline exceeded")
	}
	return status.Error(codes.Internal, "grpclimit: rate limiter failed")
}

// WithoutMetadata stops the interceptors from sending the RateLimit-Policy and RateLimit
// figures as header metadata ("ratelimit-policy" and "ratelimit"), for services that
// prefer not to disclose their limits. The default is to send them with every call the
// limiter's store decided, allowed or denied: the same values, one entry per policy (per
// rule of a composite), as httplimit's headers (docs/httplimit.md).
func WithoutMetadata() Option {
	return optionFunc(func(o *options) { o.noMetadata = true })
}
