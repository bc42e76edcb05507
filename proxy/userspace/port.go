package userspace

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// servicePort is one Service port of one family: its balancer, its proxy
// socket (while it has endpoints) and its open connections.
type servicePort struct {
	p      *Proxier
	key    portKey
	name   string // "namespace/name:port", as in the portal rules' comments
	proto  nodetable.Protocol
	listen netip.AddrPort
	lb     *balancer
	stats  *portStats
	log    *slog.Logger

	// ctx ends pending dials when the port is stopped.
	ctx    context.Context
	cancel context.CancelFunc

	// sock is the open proxy socket, nil while there are no endpoints;
	// guarded by p.mu.
	sock portSocket

	connMu  sync.Mutex
	conns   map[*tcpSession]struct{} // open TCP connections
	stopped bool
}

// portSocket is an open TCP or UDP proxy socket.
type portSocket interface {
	// close closes the socket. A UDP socket's flows end with it; TCP
	// connections stay (servicePort.stop closes those).
	close()
	// endpointsRemoved ends the UDP flows to endpoints that are gone.
	endpointsRemoved(eps []netip.AddrPort)
}

func (p *Proxier) newServicePort(k portKey, listen netip.AddrPort) *servicePort {
	ctx, cancel := context.WithCancel(context.Background())
	sp := &servicePort{
		p: p, key: k, name: k.name.String(), proto: k.name.Protocol, listen: listen,
		lb:     newBalancer(p.opts.Now),
		stats:  p.metrics.port(k),
		ctx:    ctx,
		cancel: cancel,
		conns:  map[*tcpSession]struct{}{},
	}
	sp.log = p.log.With("servicePort", sp.name, "protocol", sp.proto.Lower())
	return sp
}

// update sets the endpoints and affinity, and opens or closes the socket
// as the endpoints come and go. Called with p.mu held.
func (sp *servicePort) update(endpoints []netip.AddrPort, affinitySeconds int32) error {
	changed, removed := sp.lb.update(endpoints, affinitySeconds)
	sp.stats.endpoints.Set(float64(len(endpoints)))
	if changed {
		sp.log.Debug("endpoints changed", "endpoints", endpoints, "removed", removed, "affinitySeconds", affinitySeconds)
	}
	if len(endpoints) == 0 {
		if sp.sock != nil {
			sp.log.Info("no endpoints: closing the proxy socket, new connections are refused", "proxyAddress", sp.listen)
			sp.sock.close()
			sp.sock = nil
			sp.stats.listening.Set(0)
		}
		return nil
	}
	if sp.sock != nil {
		if len(removed) > 0 {
			sp.sock.endpointsRemoved(removed)
		}
		return nil
	}
	var err error
	if sp.proto == nodetable.UDP {
		sp.sock, err = sp.listenUDP()
	} else {
		sp.sock, err = sp.listenTCP()
	}
	if err != nil {
		sp.sock = nil
		sp.stats.fail(errAccept)
		return fmt.Errorf("service port %s (%s): %w", sp.name, sp.proto, err)
	}
	sp.stats.listening.Set(1)
	sp.log.Debug("proxy socket open", "proxyAddress", sp.listen)
	return nil
}

// stop closes the socket and every connection. Called with p.mu held.
func (sp *servicePort) stop() {
	sp.cancel()
	if sp.sock != nil {
		sp.sock.close()
		sp.sock = nil
	}
	sp.stats.listening.Set(0)
	sp.connMu.Lock()
	sp.stopped = true
	conns := slices.Collect(maps.Keys(sp.conns))
	clear(sp.conns)
	sp.connMu.Unlock()
	for _, s := range conns {
		s.close()
	}
}

// track registers an open connection, so that stop closes it. It returns
// false when the port is already stopped.
func (sp *servicePort) track(s *tcpSession) bool {
	sp.connMu.Lock()
	defer sp.connMu.Unlock()
	if sp.stopped {
		return false
	}
	sp.conns[s] = struct{}{}
	return true
}

func (sp *servicePort) untrack(s *tcpSession) {
	sp.connMu.Lock()
	defer sp.connMu.Unlock()
	delete(sp.conns, s)
}

// dial connects to an endpoint for a new connection from client, as v1.25's
// TryConnectEndpoints did: one attempt per dial timeout, each to the
// balancer's next choice, and after a failure without the client's
// affinity, so that a refusing endpoint is skipped.
func (sp *servicePort) dial(network string, client netip.Addr) (net.Conn, netip.AddrPort, error) {
	resetAffinity := false
	for _, timeout := range sp.p.opts.DialTimeouts {
		ep, err := sp.lb.next(client, resetAffinity)
		if err != nil {
			sp.stats.fail(errNoEndpoints)
			return nil, ep, err
		}
		c, err := sp.p.dial(sp.ctx, network, ep, timeout)
		if err == nil {
			return c, ep, nil
		}
		if sp.ctx.Err() != nil {
			return nil, ep, sp.ctx.Err()
		}
		sp.stats.fail(errDial)
		sp.log.Debug("dial failed, trying the next endpoint", "endpoint", ep, "client", client, "err", err)
		resetAffinity = true
	}
	sp.stats.fail(errConnect)
	return nil, netip.AddrPort{}, fmt.Errorf("no endpoint answered in %d attempts", len(sp.p.opts.DialTimeouts))
}

// dial opens a connection to ep within timeout, in the proxier's namespace.
func (p *Proxier) dial(ctx context.Context, network string, ep netip.AddrPort, timeout time.Duration) (net.Conn, error) {
	if ep.Addr().Unmap().Is4() {
		network += "4"
	} else {
		network += "6"
	}
	var c net.Conn
	err := p.inNS(func() error {
		d := net.Dialer{Timeout: timeout}
		var err error
		c, err = d.DialContext(ctx, network, ep.String())
		return err
	})
	return c, err
}

// listenNetwork is "tcp4", "udp6" and so on for the listen address: the
// IPv6 wildcard must not take the IPv4 ports too.
func listenNetwork(proto string, a netip.Addr) string {
	if a.Is4() {
		return proto + "4"
	}
	return proto + "6"
}
