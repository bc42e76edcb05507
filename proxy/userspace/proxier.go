// Package userspace is the data plane of kube-proxy's userspace mode, as
// the v1.25 proxier (pkg/proxy/userspace) ran it: one TCP or UDP socket per
// Service port on the proxy port that ruleset/userspace allocated, to which
// the portal rules send the Service's traffic; a round-robin balancer with
// ClientIP affinity per Service port; TCP dialled with a retry on the next
// endpoint; UDP as one flow per client address with an idle timeout.
//
// The Proxier knows nothing of iptables: the caller applies the portal
// rules of the same rulesets (internal/cli's proxy command does, through
// the iptables apply path). See README.md for the packet flow and the
// differences from v1.25.
package userspace

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// Defaults, as kube-proxy v1.25 had them.
var (
	// DefaultUDPIdleTimeout is v1.25's --udp-timeout default
	// (KubeProxyConfiguration.udpIdleTimeout).
	DefaultUDPIdleTimeout = 250 * time.Millisecond
	// DefaultDialTimeouts are v1.25's EndpointDialTimeouts: one dial per
	// entry, each to the next endpoint, before a connection is given up.
	DefaultDialTimeouts = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}
)

// LevelConn is the log level of per-connection messages, below slog's
// Debug so that debug logs of changes stay readable.
const LevelConn = slog.LevelDebug - 4

// sweepPeriod is how often expired client affinities are forgotten.
const sweepPeriod = 10 * time.Second

// Options configure a Proxier. The zero value works.
type Options struct {
	// UDPIdleTimeout closes a UDP flow after this long without a datagram
	// in either direction; zero means DefaultUDPIdleTimeout.
	UDPIdleTimeout time.Duration
	// DialTimeouts are the successive dial attempts of one connection;
	// nil means DefaultDialTimeouts.
	DialTimeouts []time.Duration
	// Logger receives the proxy's logs; nil discards them.
	Logger *slog.Logger
	// Metrics receives the counters; nil means NewMetrics().
	Metrics *Metrics
	// InNamespace, if set, runs every function that creates a socket, so
	// that a test can create them in a network namespace (netlab's NS.Do).
	// Nil runs them directly.
	InNamespace func(fn func() error) error
	// Now is the clock of session affinity; nil means time.Now.
	Now func() time.Time
}

// Proxier runs the proxy sockets of a set of userspace rulesets. Update
// may be called at any time, from any goroutine; Close ends everything.
type Proxier struct {
	opts    Options
	log     *slog.Logger
	metrics *Metrics

	mu     sync.Mutex
	ports  map[portKey]*servicePort
	closed bool
	wg     sync.WaitGroup // every goroutine the proxier started
}

// portKey identifies a Service port of one family: a dual-stack Service
// has one proxy port per family.
type portKey struct {
	family nodetable.Family
	name   nodetable.ServicePortName
}

// New returns a Proxier with no Service ports.
func New(opts Options) *Proxier {
	if opts.UDPIdleTimeout <= 0 {
		opts.UDPIdleTimeout = DefaultUDPIdleTimeout
	}
	if len(opts.DialTimeouts) == 0 {
		opts.DialTimeouts = DefaultDialTimeouts
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.InNamespace == nil {
		opts.InNamespace = func(fn func() error) error { return fn() }
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Proxier{opts: opts, log: opts.Logger, metrics: opts.Metrics, ports: map[portKey]*servicePort{}}
}

// Metrics returns the proxier's counters.
func (p *Proxier) Metrics() *Metrics { return p.metrics }

// Update makes the proxy sockets match rulesets (one per family). A Service
// port whose proxy address and protocol are unchanged keeps its socket and
// connections, and only its endpoints and affinity are updated in place. A
// Service port that is gone, or moved to another proxy port, is closed
// with all its connections. A Service port without endpoints has its
// socket closed, so that new connections are refused, as REJECT does in
// the other modes, and reopened when endpoints come back.
//
// Ports that could not be opened are reported in the error and retried by
// the next Update; everything else is applied regardless.
func (p *Proxier) Update(rulesets []*userspace.Ruleset) error {
	want := map[portKey]wantPort{}
	var errs []error
	for _, rs := range rulesets {
		for i := range rs.Ports {
			port := &rs.Ports[i]
			k := portKey{family: rs.Family, name: port.Name}
			switch {
			case port.ProxyPort == 0:
				// The range is full; the renderer wrote no portal
				// rules for it either.
				p.log.Warn("skipping service port: no proxy port allocated (--proxy-port-range is full)",
					"servicePort", port.Name.String(), "protocol", port.Name.Protocol.Lower())
				continue
			case port.Name.Protocol != nodetable.TCP && port.Name.Protocol != nodetable.UDP:
				// v1.25: "SCTP is not supported for user space proxy".
				p.log.Debug("skipping service port: protocol not supported by the userspace proxy",
					"servicePort", port.Name.String(), "protocol", port.Name.Protocol.Lower())
				continue
			}
			want[k] = wantPort{port: port, listen: netip.AddrPortFrom(rs.ListenIP, port.ProxyPort)}
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("proxier is closed")
	}
	for k, sp := range p.ports {
		if w, ok := want[k]; !ok || w.listen != sp.listen {
			sp.log.Info("closing service port and its connections", "proxyAddress", sp.listen)
			sp.stop()
			delete(p.ports, k)
			p.metrics.drop(k)
		}
	}
	for k, w := range want {
		sp, ok := p.ports[k]
		if !ok {
			sp = p.newServicePort(k, w.listen)
			p.ports[k] = sp
			sp.log.Info("adding service port", "portal", w.port.Portal, "proxyAddress", w.listen)
		}
		if err := sp.update(w.port.Endpoints, w.port.AffinityTimeoutSeconds); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// wantPort is a Service port of the rulesets and its proxy address.
type wantPort struct {
	port   *userspace.Port
	listen netip.AddrPort
}

// Run sweeps expired client affinities until ctx is done, then closes the
// proxier and returns once every connection is closed.
func (p *Proxier) Run(ctx context.Context) {
	t := time.NewTicker(sweepPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.Close()
			return
		case <-t.C:
			p.mu.Lock()
			for _, sp := range p.ports {
				sp.lb.sweep()
			}
			p.mu.Unlock()
		}
	}
}

// Close closes every socket and connection and waits for the proxier's
// goroutines to finish. Update fails afterwards.
func (p *Proxier) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		for k, sp := range p.ports {
			sp.stop()
			p.metrics.drop(k)
		}
		clear(p.ports)
		p.log.Info("userspace proxy stopped")
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// inNS runs fn, which creates sockets, as Options.InNamespace says.
func (p *Proxier) inNS(fn func() error) error { return p.opts.InNamespace(fn) }

// goroutine runs fn on a new goroutine that Close waits for.
func (p *Proxier) goroutine(fn func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		fn()
	}()
}
