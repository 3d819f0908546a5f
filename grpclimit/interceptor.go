package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/rlheader"
	"github.com/ratekit/limiter/store"
)

// Interceptors limits the calls of a gRPC server with one limiter.Limiter: Unary and
// Stream return its interceptors, which share the limiter, the options and so the keys'
// limits. It is safe for concurrent use. Make one with New; the interceptors of a nil or
// zero Interceptors answer every call with codes.Internal.
type Interceptors struct {
	l *limiter.Limiter
	o options
	p *rlheader.Policies // l's policies, for the RateLimit metadata
}

// New returns the interceptors that limit calls with l, one limit per key (ByPeer unless
// WithKey says otherwise). A call that is allowed goes on to the handler; one that is
// denied ends with codes.ResourceExhausted and a google.rpc.RetryInfo detail saying when
// to retry (see the package documentation for every outcome).
//
// When l's store is unavailable the interceptors follow l's failure policy: a call that
// the policy allows (FailOpen, or a Fallback limiter that allows it) is served; one that
// a Fallback limiter denies gets ResourceExhausted with RetryInfo; under FailClosed, and
// when the store is closed, the error handler answers (codes.Unavailable by default).
//
// A nil l, or an option with a value it cannot use, is an error wrapping
// algo.ErrInvalidConfig. Nil options are ignored.
func New(l *limiter.Limiter, opts ...Option) (*Interceptors, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: grpclimit.New: limiter is nil", algo.ErrInvalidConfig)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	return &Interceptors{l: l, o: o, p: rlheader.New(l, "", false)}, nil
}

// Unary returns the unary server interceptor, for grpc.UnaryInterceptor or
// grpc.ChainUnaryInterceptor. It decides before the handler runs; a call that is not
// allowed never reaches it.
func (i *Interceptors) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		md, err := i.admit(ctx, info.FullMethod)
		if md != nil {
			// Fails only outside a gRPC server (a test calling the interceptor), where
			// there is no client to tell.
			_ = grpc.SetHeader(ctx, md)
		}
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// Stream returns the stream server interceptor, for grpc.StreamInterceptor or
// grpc.ChainStreamInterceptor. A stream is limited once, when it opens (with the cost of
// WithCost): the messages it then carries are not counted.
func (i *Interceptors) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		md, err := i.admit(ss.Context(), info.FullMethod)
		if md != nil {
			_ = ss.SetHeader(md)
		}
		if err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

// admit decides on one call: nil serves it, an error ends it with that error. md is the
// RateLimit header metadata to send with either, nil for none.
func (i *Interceptors) admit(ctx context.Context, method string) (md metadata.MD, err error) {
	if i == nil || i.l == nil {
		// A nil or zero Interceptors (not made by New): the server's bug, answered as one
		// rather than with a panic in the middle of serving.
		return nil, DefaultErrorHandler(ctx, method, errUnmade)
	}
	if i.o.skip[method] {
		return nil, nil
	}
	k, err := i.o.key(ctx, method)
	if err == nil && k == "" {
		err = fmt.Errorf("%w: KeyFunc returned an empty key", httplimit.ErrMissingKey)
	}
	if err != nil {
		return nil, i.o.onError(ctx, method, err)
	}
	n := int64(1)
	if i.o.cost != nil {
		n = i.o.cost(ctx, method)
	}
	switch {
	case n == 0:
		return nil, nil
	case n < 0:
		return nil, i.o.onError(ctx, method, fmt.Errorf("%w: grpclimit: WithCost returned %d for %s", algo.ErrInvalidRequest, n, method))
	}
	// The algorithm is read before the decision, as httplimit does.
	a := i.l.Algorithm()
	dctx, f := ctx, (*rlheader.Figures)(nil)
	if !i.o.noMetadata {
		dctx, f = i.p.Trace(ctx, n)
	}
	d, err := i.l.AllowN(dctx, k, n)
	if err == nil && !i.o.noMetadata {
		// The store answered: the figures describe our policies (not a failure
		// policy's), exactly as httplimit's headers.
		md = metadata.MD{}
		rlheader.Add(func(name, value string) { md.Append(name, value) }, i.p.Items(a, d, f, 0), "", "")
	}
	switch {
	case d.Allowed:
		// Allowed by the limit, or (err != nil) by FailOpen or a Fallback limiter: the
		// failure policy decided to serve.
		return md, nil
	case err == nil:
		return md, denied(d.RetryAfter)
	case errors.Is(err, store.ErrUnavailable) && d.RetryAfter > 0:
		// A Fallback limiter denied it: a real rate-limit denial, by another policy.
		return nil, denied(d.RetryAfter)
	default:
		// FailClosed (its Decision is empty), a closed store, an ended context.
		return nil, i.o.onError(ctx, method, err)
	}
}

// errUnmade is the error of every call through an Interceptors not made by New.
var errUnmade = fmt.Errorf("%w: grpclimit: Interceptors not made by New", algo.ErrInvalidConfig)

// deniedMessage is the status message of every denial.
const deniedMessage = "grpclimit: rate limit exceeded"

// errNeverGranted is the denial of a call that can never be granted: built once, since it
// carries nothing that varies.
var errNeverGranted = status.Error(codes.ResourceExhausted, deniedMessage)

// denied returns the status of a denied call: ResourceExhausted with a RetryInfo whose
// retry_delay is retryAfter, exact to the nanosecond. A call that can never be granted
// (retryAfter == algo.Never: its cost is above what the limit ever grants) gets no
// RetryInfo, since no delay would help and clients that honour RetryInfo would come
// back for nothing.
func denied(retryAfter time.Duration) error {
	if retryAfter == algo.Never {
		return errNeverGranted
	}
	st, err := status.New(codes.ResourceExhausted, deniedMessage).WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)})
	if err != nil {
		// WithDetails fails only if a detail does not marshal, which a RetryInfo always
		// does; the denial still stands without it.
		return errNeverGranted
	}
	return st.Err()
}
