package ipvs

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// traceJSON is the part of trace -o json these tests read.
type traceJSON struct {
	Verdict   string `json:"verdict"`
	Scheduler string `json:"scheduler"`
	Endpoints []struct {
		Address     string      `json:"address"`
		Probability float64     `json:"probability"`
		Path        []traceStep `json:"path"`
	} `json:"endpoints"`
	Path []traceStep `json:"path"`
}

// traceStep is one rule a traced packet matched.
type traceStep struct{ Table, Chain, Rule string }

// trace runs `trace -o json` of the example in ipvs mode with rest.
func (n *node) trace(rest ...string) traceJSON {
	n.t.Helper()
	r := expect(n.t, n.run("trace", append(append(append([]string{}, exampleArgs...), "-o", "json"), rest...)...), exitOK)
	var got traceJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		n.t.Fatalf("%v\n%s", err, r)
	}
	return got
}

// addresses are the endpoints' addresses, sorted.
func (tr traceJSON) addresses() []string {
	var out []string
	for _, e := range tr.Endpoints {
		out = append(out, e.Address)
	}
	return slices.Sorted(slices.Values(out))
}

// TestE2EIPVSTraceLive applies the example, then traces a pod's
// connection to a ClusterIP against the kernel's IPVS table and helper
// rules: it agrees with the render (dnat, the scheduler, the real
// servers); then a real server deleted and the scheduler changed by hand
// show in the live trace only.
func TestE2EIPVSTraceLive(t *testing.T) {
	n := newNode(t)
	pkt := []string{"--from", "10.244.0.5", "--to", "10.96.0.10:80"}
	live := append(slices.Clone(pkt), "--live")
	expect(t, n.run("apply", exampleArgs...), exitOK)
	want := n.trace(pkt...)
	if want.Verdict != "dnat" || want.Scheduler != "rr" || len(want.Endpoints) != 3 {
		t.Fatalf("the rendered trace: %+v", want)
	}
	if got := n.trace(live...); !reflect.DeepEqual(got, want) {
		t.Fatalf("the live trace after apply differs from the render:\nlive:     %+v\nrendered: %+v", got, want)
	}

	n.sh("ipvsadm", "-d", "-t", "10.96.0.10:80", "-r", "10.244.0.11:8080")
	n.sh("ipvsadm", "-E", "-t", "10.96.0.10:80", "-s", "wrr")
	got := n.trace(live...)
	if rs := got.addresses(); got.Verdict != "dnat" || got.Scheduler != "wrr" ||
		!slices.Equal(rs, []string{"10.244.0.12:8080", "10.244.1.13:8080"}) || got.Endpoints[0].Probability != 0.5 {
		t.Fatalf("the live trace after a real server was deleted and wrr set by hand: %+v", got)
	}
	if again := n.trace(pkt...); !reflect.DeepEqual(again, want) {
		t.Fatalf("a hand edit of the kernel changed the rendered trace:\nbefore: %+v\nafter:  %+v", want, again)
	}
}
