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

// Bounds of the check's waits. The events of one packet come within
// microseconds of its injection and are queued on the listener's socket
// at once, so a loaded machine delays reading them, not their arrival:
// quiet ends the collection once the probe's events stopped, eventWait
// bounds the wait for them, and netlinkWait each answer of the kernel
// over netlink (the check's table, the tun device, the connection
// tracking entry). A wait that runs out is an error that says what was
// waited for and how long.
const (
	quiet       = 300 * time.Millisecond
	eventWait   = 3 * time.Second
	netlinkWait = 5 * time.Second
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
// table inet kubectl-svcproxy-trace (see claimTable) and, for a probe
// that does not come from the node, the tun device svcproxy-trace, and
// deletes both; it also deletes the connection tracking entry the probe
// created. The caller holds the run lock, which keeps two checks in one
// namespace from sharing the table and the device.
func Run(p Probe, via trace.Via) ([]Event, error) {
	var t *tun
	if via != trace.ViaNode {
		var err error
		if t, err = openTun(netlinkWait); err != nil {
			return nil, err
		}
		defer t.close()
	}
	own, err := arm(p, netlinkWait)
	if err != nil {
		return nil, err
	}
	defer disarm(own, netlinkWait) //nolint:errcheck // best effort: reset removes what is left
	l, err := listen()
	if err != nil {
		return nil, err
	}
	defer l.close()
	if t != nil {
		err = t.send(p, netlinkWait)
	} else {
		err = sendAsNode(p, netlinkWait)
	}
	if err != nil {
		return nil, err
	}
	events, err := l.collect(p, quiet, eventWait, t == nil)
	forgetConnection(p, netlinkWait)
	return events, err
}

// forgetConnection deletes the probe's connection tracking entry, so that
// it holds no port and is not mistaken for a client's; best effort,
// bounded by wait.
func forgetConnection(p Probe, wait time.Duration) {
	family := netlink.InetFamily(unix.AF_INET)
	if p.Src.Is6() {
		family = unix.AF_INET6
	}
	h, err := netlink.NewHandle(unix.NETLINK_NETFILTER)
	if err != nil {
		return
	}
	defer h.Close()
	if h.SetSocketTimeout(wait) == nil {
		_, _ = h.ConntrackDeleteFilters(netlink.ConntrackTable, family, probeFlow{p})
	}
}

type probeFlow struct{ p Probe }

func (f probeFlow) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	fw := flow.Forward
	return fw.Protocol == f.p.proto() && fw.SrcPort == f.p.SrcPort && fw.DstPort == f.p.Port &&
		fw.SrcIP.Equal(net.IP(f.p.Src.AsSlice())) && fw.DstIP.Equal(net.IP(f.p.Dst.AsSlice()))
}
