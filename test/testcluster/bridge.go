package testcluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// Bridge lets a process inside a lab network namespace reach
// kube-apiserver, which listens on the root namespace's loopback: a TCP
// listener on 127.0.0.1 inside the namespace (the address kube-apiserver's
// certificate names, so TLS verifies as it does outside) forwards every
// connection to kube-apiserver. Cut and Restore take the API server away
// and bring it back, as an outage would, without touching kube-apiserver.
type Bridge struct {
	// Addr is where the bridge listens inside the namespace: 127.0.0.1:port.
	Addr string

	ns     netlab.NS
	target string // kube-apiserver's host:port in the root namespace

	// received counts the bytes kube-apiserver sent through the bridge:
	// what the client inside received, TLS and HTTP framing included.
	received atomic.Int64
	// connections counts the connections the client opened.
	connections atomic.Int64

	mu     sync.Mutex
	ln     net.Listener // nil while cut
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// BridgeInto opens a Bridge into ns and returns a kubeconfig that reaches
// the cluster through it as User, the least-privileged identity the tool
// runs as. Use NewBridge and Bridge.Kubeconfig for another user or to cut
// the bridge.
func (c *Cluster) BridgeInto(t testing.TB, ns netlab.NS) (kubeconfig string) {
	t.Helper()
	return c.NewBridge(t, ns).Kubeconfig(t, c.UserKubeconfig)
}

// NewBridge opens a Bridge into ns, closed when the test ends.
func (c *Cluster) NewBridge(t testing.TB, ns netlab.NS) *Bridge {
	t.Helper()
	u, err := url.Parse(c.Server)
	if err != nil {
		t.Fatalf("testcluster: server %q: %v", c.Server, err)
	}
	b := &Bridge{Addr: "127.0.0.1:0", ns: ns, target: u.Host, conns: map[net.Conn]struct{}{}}
	if err := b.listen(); err != nil {
		t.Fatalf("testcluster: bridge into %s: %v", ns.Name(), err)
	}
	t.Cleanup(b.close)
	return b
}

// Kubeconfig writes a copy of the kubeconfig at from (one of the
// Cluster's) whose server is the bridge, and returns its path.
func (b *Bridge) Kubeconfig(t testing.TB, from string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + b.Addr
	}
	base := strings.TrimSuffix(filepath.Base(from), ".kubeconfig")
	path := filepath.Join(filepath.Dir(from), fmt.Sprintf("%s-via-%s.kubeconfig", base, b.ns.Name()))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return path
}

// listen opens the listener inside the namespace, on the port of Addr
// (any free port the first time), and starts accepting.
func (b *Bridge) listen() error {
	var ln net.Listener
	err := b.ns.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", b.Addr)
		return err
	})
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		ln.Close()
		return errors.New("bridge closed")
	}
	b.ln, b.Addr = ln, ln.Addr().String()
	b.wg.Add(1)
	go b.accept(ln)
	return nil
}

func (b *Bridge) accept(ln net.Listener) {
	defer b.wg.Done()
	for {
		in, err := ln.Accept()
		if err != nil {
			return // closed by Cut or close
		}
		// Dialled from this goroutine, which runs in the root namespace.
		out, err := net.Dial("tcp", b.target)
		if err != nil {
			in.Close()
			continue
		}
		if !b.track(in, out) {
			return
		}
		b.connections.Add(1)
		b.wg.Add(2)
		go b.pipe(in, countingReader{out, &b.received})
		go b.pipe(out, in)
	}
}

// track registers a connection pair, unless the bridge was cut meanwhile.
func (b *Bridge) track(conns ...net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ln == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		b.conns[c] = struct{}{}
	}
	return true
}

// Received is the bytes kube-apiserver has sent to the namespace through
// the bridge, on every connection so far.
func (b *Bridge) Received() int64 { return b.received.Load() }

// Connections is the number of connections made through the bridge.
func (b *Bridge) Connections() int64 { return b.connections.Load() }

// countingReader is a connection whose reads are added to n.
type countingReader struct {
	net.Conn
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// pipe copies src to dst, then closes both, so the peer sees the end.
func (b *Bridge) pipe(dst, src net.Conn) {
	defer b.wg.Done()
	io.Copy(dst, src)
	b.mu.Lock()
	delete(b.conns, src)
	delete(b.conns, dst)
	b.mu.Unlock()
	src.Close()
	dst.Close()
}

// Cut closes the listener and every open connection: clients inside the
// namespace see their connections reset and new ones refused, as when
// kube-apiserver is down.
func (b *Bridge) Cut() {
	b.mu.Lock()
	ln := b.ln
	b.ln = nil
	conns := b.conns
	b.conns = map[net.Conn]struct{}{}
	b.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for c := range conns {
		c.Close()
	}
}

// Restore listens again on the same address after Cut.
func (b *Bridge) Restore(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	up := b.ln != nil
	b.mu.Unlock()
	if up {
		return
	}
	if err := b.listen(); err != nil {
		t.Fatalf("testcluster: restore bridge into %s: %v", b.ns.Name(), err)
	}
}

// close cuts the bridge for good and waits for its goroutines.
func (b *Bridge) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.Cut()
	b.wg.Wait()
}
