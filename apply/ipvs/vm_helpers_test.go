package ipvs

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

// The tests named TestIPVS* need IPVS and dummy links, which only the VM's
// kernel has: TestInVM boots this package's test binary there and runs them.
func TestMain(m *testing.M) { vmtest.Main(m) }

func TestInVM(t *testing.T) { vmtest.Run(t, ".", "-test.run", "^TestIPVS") }

// plainExec runs the iptables tools inside a lab namespace.
type plainExec struct{ ns netlab.NS }

func (e plainExec) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	return e.ns.RunInput(ctx, stdin, name, args...)
}

// countingKernel counts the calls that create, edit or delete virtual
// servers, so that tests can tell an in-place edit from a re-creation.
type countingKernel struct {
	Kernel
	mu                  sync.Mutex
	adds, edits, delete int
}

func (k *countingKernel) AddService(vs *ipvs.VirtualServer) error {
	k.mu.Lock()
	k.adds++
	k.mu.Unlock()
	return k.Kernel.AddService(vs)
}

func (k *countingKernel) EditService(vs *ipvs.VirtualServer) error {
	k.mu.Lock()
	k.edits++
	k.mu.Unlock()
	return k.Kernel.EditService(vs)
}

func (k *countingKernel) DeleteService(vs *ipvs.VirtualServer) error {
	k.mu.Lock()
	k.delete++
	k.mu.Unlock()
	return k.Kernel.DeleteService(vs)
}

func (k *countingKernel) reset() (adds, edits, deletes int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	adds, edits, deletes = k.adds, k.edits, k.delete
	k.adds, k.edits, k.delete = 0, 0, 0
	return
}

// vmClient returns a client of the real kernel in the lab's node
// namespace, with kube-proxy's sysctls set there.
func vmClient(t testing.TB, lab *netlab.Lab) (*Client, *countingKernel) {
	t.Helper()
	vmtest.RequireGuest(t)
	k, err := OpenKernel("/run/netns/" + lab.Node().Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	ck := &countingKernel{Kernel: k}
	own := render.IPVSOwnership(nil)
	c := &Client{Kernel: ck, IPTables: &applyipt.Client{Exec: plainExec{lab.Node()}, Backend: applyipt.NFT, Ownership: own.Chains}, Ownership: own, PollInterval: 200 * time.Millisecond}
	if err := c.EnsureSysctls(false); err != nil {
		t.Fatal(err)
	}
	return c, ck
}

func apply(t *testing.T, c *Client, desired ...*ipvs.Ruleset) []*Plan {
	t.Helper()
	plans := mustPlan(t, c, desired...)
	if err := c.Apply(t.Context(), plans); err != nil {
		t.Fatal(err)
	}
	return plans
}

// procService is one virtual server as the kernel lists it in
// /proc/net/ip_vs, read independently of the netlink code under test.
type procService struct {
	sched      string
	persistent bool
	dests      map[netip.AddrPort]int // weight
}

// procIPVS parses the node namespace's /proc/net/ip_vs (IPv4 entries),
// keyed by "tcp 10.96.0.10:80".
func procIPVS(t *testing.T, ns netlab.NS) map[string]*procService {
	t.Helper()
	out, err := ns.Run(t.Context(), "cat", "/proc/net/ip_vs")
	if err != nil {
		t.Fatal(err)
	}
	svcs := map[string]*procService{}
	var cur *procService
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && (f[0] == "TCP" || f[0] == "UDP" || f[0] == "SCTP"):
			cur = &procService{sched: f[2], persistent: len(f) > 3 && f[3] == "persistent", dests: map[netip.AddrPort]int{}}
			svcs[strings.ToLower(f[0])+" "+hexAddrPort(t, f[1]).String()] = cur
		case len(f) >= 4 && f[0] == "->" && cur != nil && !strings.HasPrefix(f[1], "Remote"):
			w, _ := strconv.Atoi(f[3])
			cur.dests[hexAddrPort(t, f[1])] = w
		}
	}
	return svcs
}

// hexAddrPort reads "0A60000A:0050".
func hexAddrPort(t *testing.T, s string) netip.AddrPort {
	a, p, _ := strings.Cut(s, ":")
	ab, err1 := hex.DecodeString(a)
	port, err2 := strconv.ParseUint(p, 16, 16)
	addr, ok := netip.AddrFromSlice(ab)
	if err1 != nil || err2 != nil || !ok {
		t.Fatalf("bad /proc/net/ip_vs address %q", s)
	}
	return netip.AddrPortFrom(addr, uint16(port))
}

// serveHeld starts a TCP server in the pod that greets each connection
// as netlab's backends do ("name client-address"). A client that sends a
// line within half a second keeps the connection open, and every line is
// answered with the pod's name; others are closed, as netlab's probes
// expect.
func serveHeld(t *testing.T, p *netlab.Pod, port uint16) {
	t.Helper()
	var ln net.Listener
	err := p.NS().Do(func() error {
		var err error
		ln, err = net.Listen("tcp", netip.AddrPortFrom(p.IP(), port).String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := c.Write([]byte(p.Name() + " " + c.RemoteAddr().String() + "\n")); err != nil {
					return
				}
				r := bufio.NewReader(c)
				c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					c.SetReadDeadline(time.Time{})
					if _, err := c.Write([]byte(p.Name() + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
}

// heldConn is a TCP connection kept open across applies.
type heldConn struct {
	c *net.TCPConn
	r *bufio.Reader
}

func dialHeld(t *testing.T, ns netlab.NS, dst netip.AddrPort) *heldConn {
	t.Helper()
	var c net.Conn
	err := ns.Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp", dst.String(), 2*time.Second)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &heldConn{c: c.(*net.TCPConn), r: bufio.NewReader(c)}
	t.Cleanup(func() { h.c.Close() })
	h.c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := h.r.ReadString('\n'); err != nil {
		t.Fatalf("greeting on %s: %v", dst, err)
	}
	if _, err := h.ask(); err != nil {
		t.Fatalf("holding the connection to %s: %v", dst, err)
	}
	return h
}

// ask sends a line and returns the backend that answered on the held connection.
func (h *heldConn) ask() (string, error) {
	h.c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := h.c.Write([]byte("who\n")); err != nil {
		return "", err
	}
	line, err := h.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	name := strings.TrimSpace(line)
	if name == "" {
		return "", errors.New("empty answer")
	}
	return name, nil
}

// reset closes the connection with a TCP reset, which IPVS forgets after
// 10 s (a normal close would stay in TIME_WAIT for 2 minutes).
func (h *heldConn) reset() {
	h.c.SetLinger(0)
	h.c.Close()
}
