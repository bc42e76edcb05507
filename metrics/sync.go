package metrics

import (
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// FamilyStats is what one sync did in one IP family, for the metrics
// kube-proxy sets per family after each sync. kube-proxy runs one proxier
// per family; the tool's one sync covers every family of the node, so
// each family gets the whole sync's duration.
type FamilyStats struct {
	Family nodetable.Family
	// IPTablesRules are the rules the tool owns after the sync, by table
	// (filter, nat), and IPTablesWritten the rules it wrote: iptables
	// mode only (sync_proxy_rules_iptables_total and _last).
	IPTablesRules, IPTablesWritten map[string]int
	// NoLocalInternal and NoLocalExternal count the Service ports with a
	// Local traffic policy and no local endpoints, as kube-proxy counts
	// them (NoLocalEndpoints).
	NoLocalInternal, NoLocalExternal int
	// Conntrack is the stale-flow cleanup of the sync; nil when it did
	// not run (nothing changed in the family).
	Conntrack *ConntrackRun
}

// ConntrackRun is one cleanup of stale conntrack flows.
type ConntrackRun struct {
	Took    time.Duration
	Deleted int
}

// NoLocalEndpoints counts, as kube-proxy's proxiers count them each sync,
// the ports that have endpoints somewhere but none on this node for a
// Local policy: internal (internalTrafficPolicy) and external
// (externalTrafficPolicy). A port with no endpoints at all is counted in
// neither. byService counts Services rather than ports, as kube-proxy's
// ipvs mode does.
func NoLocalEndpoints(t *nodetable.ServiceTable, byService bool) (internal, external int) {
	in, ex := map[nodetable.ServicePortName]bool{}, map[nodetable.ServicePortName]bool{}
	for i := range t.Ports {
		sp := &t.Ports[i]
		if !sp.HasEndpoints || len(sp.LocalEndpoints) > 0 {
			continue
		}
		key := sp.Name
		if byService {
			key = nodetable.ServicePortName{Namespace: key.Namespace, Name: key.Name}
		}
		if sp.InternalPolicyLocal {
			in[key] = true
		}
		if sp.ExternalPolicyLocal {
			ex[key] = true
		}
	}
	return len(in), len(ex)
}

// ObserveDuration records one sync that took took, full or partial, in
// each family, succeeded or not, as kube-proxy's proxiers time theirs.
func (p *Proxy) ObserveDuration(families []nodetable.Family, took time.Duration, full bool) {
	for _, f := range families {
		p.SyncDuration.WithLabelValues(string(f)).Observe(took.Seconds())
		if full {
			p.SyncFullDuration.WithLabelValues(string(f)).Observe(took.Seconds())
		} else {
			p.SyncPartialDuration.WithLabelValues(string(f)).Observe(took.Seconds())
		}
	}
}

// ObserveSynced records what a successful sync did in each family of
// stats, and its time.
func (p *Proxy) ObserveSynced(stats []FamilyStats) {
	for _, s := range stats {
		f := string(s.Family)
		p.NoLocalEndpoints.WithLabelValues("internal", f).Set(float64(s.NoLocalInternal))
		p.NoLocalEndpoints.WithLabelValues("external", f).Set(float64(s.NoLocalExternal))
		for table, n := range s.IPTablesRules {
			p.IPTablesRules.WithLabelValues(table, f).Set(float64(n))
		}
		for table, n := range s.IPTablesWritten {
			p.IPTablesRulesLast.WithLabelValues(table, f).Set(float64(n))
		}
		if c := s.Conntrack; c != nil {
			p.ConntrackReconcileDuration.WithLabelValues(f).Observe(c.Took.Seconds())
			p.ConntrackDeleted.WithLabelValues(f).Add(float64(c.Deleted))
		}
		p.LastSync.WithLabelValues(f).SetToCurrentTime()
	}
}
