package redistest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// ProxyMode is what a [Proxy] does with its connections.
type ProxyMode int

const (
	// Forward passes bytes both ways between the client and the server.
	Forward ProxyMode = iota
	// Blackhole keeps every connection open and accepts new ones, but forwards nothing
	// and answers nothing: a hung server (stopped, stuck in a script), or a network path
	// that drops packets. What a client sends meanwhile is held, not lost: switching back
	// to Forward delivers it and its answers, as a server that resumes or a network that
	// heals (TCP retransmits) does.
	Blackhole
	// Refuse closes every connection and resets new ones at once: a server that is down.
	Refuse
)

// Proxy is a TCP proxy on a free loopback port in front of a Redis server, which tests
// switch between forwarding, blackholing and refusing to see how a client copes with a
// server that hangs or is gone. Its methods are safe for concurrent use; t.Cleanup closes
// it.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	resume sync.Cond // signalled when mode changes, with mu
	closed bool
	mode   ProxyMode
	conns  map[net.Conn]struct{} // the client-side and server-side ends of open pairs
	wg     sync.WaitGroup

	running atomic.Int64 // the goroutines wg counts
}

func (p *Proxy) add(n int) { p.running.Add(int64(n)); p.wg.Add(n) }
func (p *Proxy) done()     { p.running.Add(-1); p.wg.Done() }

// Goroutines returns how many goroutines the proxy runs now, so that tests counting
// goroutines can leave them out.
func (p *Proxy) Goroutines() int { return int(p.running.Load()) }

// NewProxy starts a proxy that forwards to target ("host:port") until told otherwise.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.resume.L = &p.mu
	p.add(1)
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

// Addr returns the proxy's "127.0.0.1:port" address, the one clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set switches the proxy to m. Switching to Refuse closes every open connection;
// switching to Blackhole stops forwarding on the open ones at once; switching back to
// Forward resumes forwarding, held bytes first.
func (p *Proxy) Set(m ProxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	p.resume.Broadcast()
	if m == Refuse {
		for c := range p.conns {
			reset(c)
		}
		clear(p.conns)
	}
}

func (p *Proxy) accept() {
	defer p.done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		mode := p.mode
		p.mu.Unlock()
		if mode == Refuse {
			reset(c)
			continue
		}
		p.add(1)
		go p.pair(c) // in Blackhole, its copies hold everything until Forward

	}
}

// pair dials the target for client c and copies both ways while the mode is Forward.
func (p *Proxy) pair(c net.Conn) {
	defer p.done()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		reset(c)
		return
	}
	if !p.track(c) || !p.track(s) {
		reset(c)
		reset(s)
		return
	}
	p.add(2)
	go p.copy(s, c)
	go p.copy(c, s)
}

// track records c as open, or reports false when the proxy is refusing.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == Refuse || p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// copy forwards from src to dst chunk by chunk, checking the mode before each write:
// while blackholed, it holds the chunk it has read (and the kernel buffers the rest).
func (p *Proxy) copy(dst, src net.Conn) {
	defer p.done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.mode == Blackhole && !p.closed {
				p.resume.Wait()
			}
			stop := p.mode == Refuse || p.closed
			p.mu.Unlock()
			if stop {
				_ = src.Close()
				_ = dst.Close()
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				_ = src.Close()
				return
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}

// reset closes c with an RST rather than a FIN where it can, as a refusing host does.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	p.closed = true
	p.resume.Broadcast()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
