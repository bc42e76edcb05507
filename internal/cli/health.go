package cli

import (
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// newProxyHealth is the health of a long-running command (apply --watch,
// proxy) in mode m: kube-proxy v1.37's, or v1.25's in userspace mode, with
// the timeout given (kube-proxy's 2 × the sync period).
func newProxyHealth(m Mode, timeout time.Duration, families []nodetable.Family) *healthcheck.ProxyHealth {
	flavor := healthcheck.V137
	if m == ModeUserspace {
		flavor = healthcheck.V125
	}
	return healthcheck.New(healthcheck.Options{Flavor: flavor, Timeout: timeout, Families: families})
}
