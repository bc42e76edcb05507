package cli

import (
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// TestHealthPerMode checks what each mode serves: kube-proxy v1.37's
// health and Service health checks, listening by default where its
// nodePortAddresses default puts them; in userspace mode v1.25's health
// and no Service health checks, as v1.25's userspace proxier had none.
func TestHealthPerMode(t *testing.T) {
	for _, c := range []struct {
		mode     Mode
		flavor   healthcheck.Flavor
		checks   bool
		defaults string
	}{
		{ModeIPTables, healthcheck.V137, true, render.NodePortAll},
		{ModeIPVS, healthcheck.V137, true, render.NodePortAll},
		{ModeNFTables, healthcheck.V137, true, render.NodePortPrimary},
		{ModeUserspace, healthcheck.V125, false, ""},
	} {
		h := newProxyHealth(c.mode, time.Minute, nil)
		sc := newServiceChecks(c.mode, h, nil)
		if h.Flavor() != c.flavor || (sc != nil) != c.checks || (sc != nil && sc.defaultAddresses != c.defaults) {
			t.Errorf("%s: flavor %v, Service checks %+v; want flavor %v, checks %v at %q", c.mode, h.Flavor(), sc, c.flavor, c.checks, c.defaults)
		}
		sc.close()
	}
}
