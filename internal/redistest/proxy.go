package redistest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// ProxyMode is what a [Proxy] does with its connections.
type ProxyMode int

const (
	// Forward passes bytes both ways between the client and the server.
	Forward ProxyMode = iota
	// Blackhole keeps every connection open and accepts new ones, but forwards nothing
	// and answers nothing: a hung server, or a network path that drops packets. What a
	// client sends meanwhile is discarded, so each connection is ruined for good, as it
	// is for a real client whose request never got an answer.
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

	mu    sync.Mutex
	mode  ProxyMode
	conns map[net.Conn]struct{} // the client-side and server-side ends of open pairs
	wg    sync.WaitGroup
}

// NewProxy starts a proxy that forwards to target ("host:port") until told otherwise.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

// Addr returns the proxy's "127.0.0.1:port" address, the one clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set switches the proxy to m. Switching to Refuse closes every open connection;
// switching to Blackhole stops forwarding on the open ones at once; switching back to
// Forward lets new connections through (connections blackholed before stay silent).
func (p *Proxy) Set(m ProxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == Refuse {
		for c := range p.conns {
			reset(c)
		}
		clear(p.conns)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		mode := p.mode
		p.mu.Unlock()
		switch mode {
		case Refuse:
			reset(c)
		case Blackhole:
			p.track(c)
			p.wg.Add(1)
			go p.discard(c, nil)
		default:
			p.wg.Add(1)
			go p.pair(c)
		}
	}
}

// pair dials the target for client c and copies both ways while the mode is Forward.
func (p *Proxy) pair(c net.Conn) {
	defer p.wg.Done()
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
	p.wg.Add(2)
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

// copy forwards from src to dst chunk by chunk, checking the mode before each write: once
// blackholed, it reads and drops everything until src closes.
func (p *Proxy) copy(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			mode := p.mode
			p.mu.Unlock()
			if mode != Forward {
				p.discard(src, dst)
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

// discard reads c until it closes and throws the bytes away; then it closes other too.
// A blackholed connection ends this way, when the client gives up on it.
func (p *Proxy) discard(c, other net.Conn) {
	if other == nil {
		defer p.wg.Done()
	}
	_, _ = io.Copy(io.Discard, c)
	_ = c.Close()
	if other != nil {
		_ = other.Close()
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
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
