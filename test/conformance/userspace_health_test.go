package conformance

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// compareUserspaceHealth sends kube-proxy v1.25 and the tool's proxy, each
// in its own node namespace, the same health requests: /healthz, bar the
// times (v1.25's body, its times in Go's String form); /livez, which v1.25
// did not have; and each Service health check node port on the node IP,
// which v1.25's userspace mode did not serve: both must refuse.
func compareUserspaceHealth(t *testing.T, kp, tool netlab.NS, snap *cluster.Snapshot) {
	t.Helper()
	type check struct {
		url      string
		refused  bool
		wantCode int
	}
	checks := []check{{"http://" + healthzAddr + "/healthz", false, http.StatusOK}, {"http://" + healthzAddr + "/livez", false, http.StatusNotFound}}
	for _, svc := range snap.Services {
		if p := svc.Spec.HealthCheckNodePort; p != 0 {
			checks = append(checks, check{fmt.Sprintf("http://%s:%d/", hcNodeIPv4, p), true, 0})
		}
	}
	ctx := context.Background()
	for _, c := range checks {
		var replies [2]HTTPReply
		for i, ns := range []netlab.NS{kp, tool} {
			r, err := GetInNS(ctx, ns, c.url)
			if err != nil {
				t.Fatalf("GET %s: %v", c.url, err)
			}
			replies[i] = r.WithoutTimes()
			if ns == tool {
				if replies[i], err = replies[i].Unmarked(); err != nil {
					t.Errorf("%s: %v", c.url, err)
				}
			}
		}
		if !replies[0].Equal(replies[1]) || replies[0].Refused != c.refused || replies[0].Code != c.wantCode {
			t.Errorf("%s:\n  kube-proxy v1.25: %s\n  tool:             %s", c.url, replies[0], replies[1])
		} else {
			t.Logf("%s as kube-proxy v1.25's: %s", c.url, replies[0])
		}
	}
}
