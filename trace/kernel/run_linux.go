package kernel

import (
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// Timing of the event collection: the events of one packet come within
// microseconds; quiet ends the collection once they stopped.
const (
	quiet   = 300 * time.Millisecond
	timeout = 3 * time.Second
)

// NewProbe is the packet for a trace, from a random ephemeral port.
func NewProbe(pkt trace.Packet) (Probe, error) {
	if pkt.Protocol != "tcp" && pkt.Protocol != "udp" {
		return Probe{}, fmt.Errorf("--kernel sends tcp or udp probes, not %s", pkt.Protocol)
	}
	return Probe{Packet: pkt, SrcPort: uint16(32768 + rand.IntN(28232)), Seq: rand.Uint32()}, nil
}

// Run injects the probe in this network namespace as a packet arriving
// by via, and returns the kernel's trace events for it. It creates the
// table inet svcproxy-trace and, for a probe that does not come from the
// node, the tun device svcproxy-trace, and deletes both; it also deletes
// the connection tracking entry the probe created.
func Run(p Probe, via trace.Via) ([]Event, error) {
	var t *tun
	if via != trace.ViaNode {
		var err error
		if t, err = openTun(); err != nil {
			return nil, err
		}
		defer t.close()
	}
	if err := arm(p); err != nil {
		return nil, err
	}
	defer disarm() //nolint:errcheck // best effort: the next check replaces it
	l, err := listen()
	if err != nil {
		return nil, err
	}
	defer l.close()
	if t != nil {
		err = t.send(p)
	} else {
		err = sendAsNode(p)
	}
	if err != nil {
		return nil, err
	}
	last := p.lastEvent()
	if t == nil {
		// The node's own packet to one of its addresses passes the
		// postrouting hooks and then, over loopback, the prerouting and
		// input hooks again: wait for the events to stop.
		last = func(Event) bool { return false }
	}
	events, err := l.collect(quiet, time.Now().Add(timeout), last)
	forgetConnection(p)
	if err != nil {
		return nil, err
	}
	return ofProbe(events, p), nil
}

// ofProbe keeps the events of the traced packet that is the probe: the
// one whose first headers are the probe's.
func ofProbe(events []Event, p Probe) []Event {
	want := p.addrs()
	ids := map[uint32]bool{}
	for _, ev := range events {
		if s, d, ok := headerAddrs(ev.Network, ev.Transport); ok && [2]string{s.String(), d.String()} == want {
			ids[ev.ID] = true
		}
	}
	var out []Event
	for _, ev := range events {
		if ids[ev.ID] {
			out = append(out, ev)
		}
	}
	return out
}

// forgetConnection deletes the probe's connection tracking entry, so that
// it holds no port and is not mistaken for a client's.
func forgetConnection(p Probe) {
	family := netlink.InetFamily(unix.AF_INET)
	if p.Src.Is6() {
		family = unix.AF_INET6
	}
	_, _ = netlink.ConntrackDeleteFilters(netlink.ConntrackTable, family, probeFlow{p})
}

type probeFlow struct{ p Probe }

func (f probeFlow) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	fw := flow.Forward
	return fw.Protocol == f.p.proto() && fw.SrcPort == f.p.SrcPort && fw.DstPort == f.p.Port &&
		fw.SrcIP.Equal(net.IP(f.p.Src.AsSlice())) && fw.DstIP.Equal(net.IP(f.p.Dst.AsSlice()))
}

// lastEvent returns a test of whether an event is the probe's last: the
// probe reached the check's own chain at the end of the output or input
// path, after every translation. It learns the probe's trace ID from the
// first event, at the check's first chain.
func (p Probe) lastEvent() func(Event) bool {
	var id uint32
	known := false
	return func(ev Event) bool {
		if ev.Family != "inet" || ev.Table != TableName {
			return false
		}
		switch ev.Chain {
		case chainPre, chainOut:
			if s, d, ok := headerAddrs(ev.Network, ev.Transport); ok && [2]string{s.String(), d.String()} == p.addrs() {
				id, known = ev.ID, true
			}
		case chainPost, chainIn:
			return known && ev.ID == id
		}
		return false
	}
}
