package ipvs

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/jsoncontract"
)

// trace runs `trace -o json` of the example in ipvs mode with rest.
func (n *node) trace(rest ...string) jsoncontract.Trace {
	n.t.Helper()
	r := expect(n.t, n.run("trace", append(append(append([]string{}, exampleArgs...), "-o", "json"), rest...)...), exitOK)
	var got jsoncontract.Trace
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		n.t.Fatalf("%v\n%s", err, r)
	}
	return got
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
	if rs := got.Addresses(); got.Verdict != "dnat" || got.Scheduler != "wrr" ||
		!slices.Equal(rs, []string{"10.244.0.12:8080", "10.244.1.13:8080"}) || got.Endpoints[0].Probability != 0.5 {
		t.Fatalf("the live trace after a real server was deleted and wrr set by hand: %+v", got)
	}
	if again := n.trace(pkt...); !reflect.DeepEqual(again, want) {
		t.Fatalf("a hand edit of the kernel changed the rendered trace:\nbefore: %+v\nafter:  %+v", want, again)
	}
}
