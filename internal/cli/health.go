package cli

import (
	"log/slog"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
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

// serviceChecks serves the Services' health check node ports in apply
// --watch, after every successful sync, as kube-proxy's proxiers do at
// the end of theirs. There are none in userspace mode: kube-proxy v1.25's
// userspace proxier served none (it had no ServiceHealthServer), and the
// mode follows v1.25.
type serviceChecks struct {
	server *healthcheck.ServiceServer
	// defaultAddresses is nodePortAddresses when unset, kube-proxy's
	// per mode: every address, or the primary node IP in nftables mode.
	defaultAddresses string
}

// newServiceChecks returns the Service health checks of mode m, nil in
// userspace mode. A nil *serviceChecks does nothing.
func newServiceChecks(m Mode, health *healthcheck.ProxyHealth, log *slog.Logger) *serviceChecks {
	if m == ModeUserspace {
		return nil
	}
	c := &serviceChecks{server: healthcheck.NewServiceServer(health, log), defaultAddresses: render.NodePortAll}
	if m == ModeNFTables {
		c.defaultAddresses = render.NodePortPrimary
	}
	return c
}

// sync opens and closes the health checks of every family d renders, at
// the node port addresses of d's settings and of the node's interface
// addresses at this render.
func (c *serviceChecks) sync(d *desired) {
	if c == nil {
		return
	}
	for _, f := range d.families {
		t := d.tables.ForFamily(f)
		all, ips := d.cfg.NodePortIPs(t, c.defaultAddresses)
		c.server.Sync(f, healthcheck.Listen{All: all, IPs: ips}, healthcheck.ServiceChecks(t))
	}
}

// close closes every health check.
func (c *serviceChecks) close() {
	if c != nil {
		c.server.Close()
	}
}
