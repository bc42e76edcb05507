package kernel

import (
	"testing"
	"time"
)

// headersOf is the network and transport header of a packet from src
// to dst (IPv4, ports), as a trace event carries them.
func headersOf(p Probe) (network, transport []byte) {
	b := p.Bytes()
	return b[:20], b[20:]
}

// The collector keeps the probe's events, told by the trace ID whose
// first event showed the probe's headers, and not another traced
// packet's, whose events neither count as the probe's last event nor
// keep the collection from going quiet.
func TestCollectorKeepsTheProbesEvents(t *testing.T) {
	p := probe("203.0.113.9", "192.0.2.20", 443, "tcp")
	other := probe("203.0.113.9", "192.0.2.20", 443, "tcp")
	other.SrcPort++
	pn, pt := headersOf(p)
	on, ot := headersOf(other)
	c := &collector{want: p.addrs(), ids: map[uint32]bool{}}
	c.add(Event{ID: 7, Family: "inet", Table: TableName, Chain: chainPre, Type: "rule", Network: on, Transport: ot})
	if len(c.events) != 0 || !c.last.IsZero() {
		t.Fatalf("another packet's event was taken as the probe's: %+v", c.events)
	}
	c.add(Event{ID: 9, Family: "inet", Table: TableName, Chain: chainPre, Type: "rule", Network: pn, Transport: pt})
	c.add(Event{ID: 9, Family: "ip", Table: "kube-proxy", Chain: "services", Type: "rule", Handle: 4})
	seen := c.last
	time.Sleep(time.Millisecond)
	c.add(Event{ID: 7, Family: "ip", Table: "kube-proxy", Chain: "services", Type: "rule", Handle: 5})
	c.add(Event{ID: 7, Family: "inet", Table: TableName, Chain: chainPost, Type: "rule"})
	if len(c.events) != 2 || c.ended || c.last != seen {
		t.Fatalf("another packet's events changed the probe's: %d events, ended %v", len(c.events), c.ended)
	}
	c.add(Event{ID: 9, Family: "inet", Table: TableName, Chain: chainIn, Type: "rule"})
	if len(c.events) != 3 || !c.ended {
		t.Errorf("the probe reached the check's input chain: %d events, ended %v", len(c.events), c.ended)
	}
}
