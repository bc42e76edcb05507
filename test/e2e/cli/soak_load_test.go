package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// The soak's background load: probers dialing the unchanged Services,
// a churner changing others through the API, and a sampler of the tool's
// resident memory. Each runs in its own goroutine until its context ends
// and never stops the test itself: the test reads their counts after.

// prober dials one Service's ClusterIP from the lab's client, at most once
// per period, each connection on a new socket, and counts the answers.
type prober struct {
	name     string
	dst      netip.AddrPort
	backends []string // the pods that may answer

	ok, failed, late atomic.Int64
	mu               sync.Mutex
	failures         []string // the first few, with when and why
	lates            []string
}

// maxFailuresKept bounds the failures a prober keeps for the report.
const maxFailuresKept = 10

// run probes until ctx ends. A probe cut short by the end does not count.
func (p *prober) run(ctx context.Context, client netlab.NS, start time.Time, period, timeout time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		begin := time.Now()
		got, late, err := soakProbe(ctx, client, p.dst, timeout)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && late != "":
			p.record(&p.late, &p.lates, begin, start, fmt.Sprintf("%v (%s)", err, late))
		case err != nil:
			p.record(&p.failed, &p.failures, begin, start, err.Error())
		case !slices.Contains(p.backends, got):
			p.record(&p.failed, &p.failures, begin, start, fmt.Sprintf("answered by %q, want one of %v", got, p.backends))
		default:
			p.ok.Add(1)
		}
	}
}

// record counts a probe begun at begin in n and keeps the first few of
// them in list, with when (since start) and why.
func (p *prober) record(n *atomic.Int64, list *[]string, begin, start time.Time, why string) {
	n.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(*list) < maxFailuresKept {
		*list = append(*list, fmt.Sprintf("%s probe begun at +%v, gave up after %v: %s",
			p.dst, begin.Sub(start).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond), why))
	}
}

// soakProbe opens one TCP connection from ns to dst and reads the
// backend's name within timeout, as netlab's DialTCP does. When that
// fails, late is not empty if the network did its part in time, and says
// how: the first SYN was answered without a retransmit, or was never sent
// before the deadline. Then only the prober ran late: the test shares two
// cores with other work, and its process may not run for seconds. A
// duplicate of the socket keeps it open, to ask the kernel after package
// net has given up on it.
func soakProbe(ctx context.Context, ns netlab.NS, dst netip.AddrPort, timeout time.Duration) (backend, late string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dup := -1
	defer func() {
		switch {
		case err == nil:
		case dup >= 0:
			late = synAnswered(dup)
		case netlab.IsTimeout(err):
			late = "the deadline passed before a SYN was sent"
		}
		if dup >= 0 {
			unix.Close(dup)
		}
	}()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { dup, _ = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) })
	}}
	var c net.Conn
	err = ns.Do(func() error {
		var err error
		c, err = d.DialContext(ctx, "tcp4", dst.String())
		return err
	})
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	reply, err := io.ReadAll(io.LimitReader(c, 512))
	if err != nil {
		return "", "", err
	}
	name, _, ok := strings.Cut(string(reply), " ")
	if !ok {
		return "", "", fmt.Errorf("unexpected reply %q", reply)
	}
	return name, "", nil
}

// synAnswered describes how far the TCP socket fd got if its first SYN
// was answered: the handshake completed without a retransmit. It returns
// "" if the SYN went unanswered (still SYN-SENT, or retransmitted) or was
// refused (closed by a reset or an ICMP error). A SYN sent just before the
// deadline gets 200 ms for its answer: the lab answers in microseconds,
// a dropped SYN is retransmitted only after a second.
func synAnswered(fd int) string {
	for wait := 0; ; wait++ {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		switch {
		case err != nil:
			return ""
		case info.State == unix.BPF_TCP_SYN_SENT && wait < 20:
			time.Sleep(10 * time.Millisecond)
			continue
		case info.State == unix.BPF_TCP_SYN_SENT || info.State == unix.BPF_TCP_CLOSE || info.Total_retrans > 0:
			return ""
		}
		return fmt.Sprintf("the SYN was answered: TCP state %d, handshake RTT %v, %d bytes received",
			info.State, time.Duration(info.Rtt)*time.Microsecond, info.Bytes_received)
	}
}

// churner creates, scales and deletes the Services of a fixed set of
// slots, one operation per period, through the API server. A restart holds
// gate for writing: the churner waits meanwhile rather than fail.
type churner struct {
	client    kubernetes.Interface
	gate      *sync.RWMutex
	rng       *rand.Rand
	endpoints []string // the pool the Services' endpoints come from
	size      []int    // endpoints of each slot's Service; slotAbsent, slotUnknown

	ops     atomic.Int64
	byKind  [3]atomic.Int64 // create, scale, delete
	errs    atomic.Int64
	lastErr atomic.Value // string
}

// A slot's size when its Service does not exist, or when a failed
// operation left that unknown (it is deleted next).
const (
	slotAbsent  = -1
	slotUnknown = -2
)

const (
	opCreate = iota
	opScale
	opDelete
)

func newChurner(client kubernetes.Interface, gate *sync.RWMutex, slots int, endpoints []string) *churner {
	c := &churner{client: client, gate: gate, rng: rand.New(rand.NewPCG(1, 2)), endpoints: endpoints, size: make([]int, slots)}
	for i := range c.size {
		c.size[i] = slotAbsent
	}
	return c
}

// churnName and churnIP name slot i's Service.
func churnName(i int) string { return fmt.Sprintf("churn-%d", i) }
func churnIP(i int) string   { return fmt.Sprintf("10.96.20.%d", i+1) }

func (c *churner) run(ctx context.Context, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c.step(ctx)
	}
}

// step makes one change to a random slot: creates its Service with 1..n
// endpoints, or else scales it to 0..n endpoints (two times in three) or
// deletes it.
func (c *churner) step(ctx context.Context) {
	c.gate.RLock()
	defer c.gate.RUnlock()
	i := c.rng.IntN(len(c.size))
	name := churnName(i)
	var op, size int
	var err error
	switch {
	case c.size[i] == slotAbsent:
		op, size = opCreate, 1+c.rng.IntN(len(c.endpoints))
		err = createService(ctx, c.client, name, churnIP(i), c.pick(size)...)
	case c.size[i] == slotUnknown || c.rng.IntN(3) == 0:
		op, size = opDelete, slotAbsent
		err = c.delete(ctx, name)
	default:
		op, size = opScale, c.rng.IntN(len(c.endpoints)+1)
		err = c.scale(ctx, name, c.pick(size))
	}
	switch {
	case ctx.Err() != nil:
		// The soak ended meanwhile: not the API server's failure.
		c.size[i] = slotUnknown
	case err != nil:
		c.size[i] = slotUnknown
		c.errs.Add(1)
		c.lastErr.Store(fmt.Sprintf("%s: %v", name, err))
	default:
		c.size[i] = size
		c.ops.Add(1)
		c.byKind[op].Add(1)
	}
}

// pick returns n endpoints of the pool, in a random order.
func (c *churner) pick(n int) []string {
	eps := slices.Clone(c.endpoints)
	c.rng.Shuffle(len(eps), func(a, b int) { eps[a], eps[b] = eps[b], eps[a] })
	return eps[:n]
}

// scale replaces the endpoints of name's EndpointSlice, as the
// EndpointSlice controller does when pods come and go.
func (c *churner) scale(ctx context.Context, name string, endpoints []string) error {
	patch, err := json.Marshal(map[string]any{"endpoints": readyEndpoints(endpoints)})
	if err != nil {
		return err
	}
	_, err = c.client.DiscoveryV1().EndpointSlices("default").Patch(ctx, name+"-1", types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// delete deletes name's Service and EndpointSlice; either may be gone.
func (c *churner) delete(ctx context.Context, name string) error {
	err := c.client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err = c.client.DiscoveryV1().EndpointSlices("default").Delete(ctx, name+"-1", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// String is the churn's figures.
func (c *churner) String() string {
	s := fmt.Sprintf("%d churn operations (%d creates, %d scales, %d deletes), %d failed",
		c.ops.Load(), c.byKind[opCreate].Load(), c.byKind[opScale].Load(), c.byKind[opDelete].Load(), c.errs.Load())
	if e, ok := c.lastErr.Load().(string); ok {
		s += " (last: " + e + ")"
	}
	return s
}

// TestSoakProbe checks the soak's prober in a lab without rules: a
// connection that the network drops or refuses fails, and one whose SYN
// a backend answered, whatever came after, is never a failure.
func TestSoakProbe(t *testing.T) {
	lab := netlab.New(t)
	pod := lab.AddPod("backend", netip.MustParseAddr("10.244.0.5"))
	if err := pod.ServeTCP(8080); err != nil {
		t.Fatal(err)
	}
	// A backend whose kernel completes the handshakes but that never answers.
	var ln net.Listener
	if err := pod.NS().Do(func() error {
		var err error
		ln, err = net.Listen("tcp4", "10.244.0.5:7000")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		dst      string
		ok, late bool
	}{
		{"10.244.0.5:8080", true, false},
		{"10.244.0.5:7000", false, true},
		{"10.244.0.5:9999", false, false}, // refused
		{"10.96.99.99:80", false, false},  // no rule claims it: the SYN is dropped
	} {
		got, late, err := soakProbe(t.Context(), lab.Client(), netip.MustParseAddrPort(c.dst), 500*time.Millisecond)
		if (err == nil) != c.ok || (late != "") != c.late || (c.ok && got != "backend") {
			t.Errorf("%s: %q, late %q, error %v; want ok %v, late %v", c.dst, got, late, err, c.ok, c.late)
		}
	}
}
