package watch

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	svcmetrics "github.com/kubectl-svcproxy/kubectl-svcproxy/metrics"
)

// describer is a Registerer that keeps the name of every family
// registered on it.
type describer struct{ names map[string]bool }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil {
			d.names[m[1]] = true
		}
	}
	return nil
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		d.Register(c)
	}
}

func (d *describer) Unregister(prometheus.Collector) bool { return false }

// promName finds the metric names in a PromQL expression: the families the
// tool can export all start with one of these.
var promName = regexp.MustCompile(`\b(?:kubeproxy|svcproxy|rest_client|kubernetes|process|go)_[a-z0-9_]+`)

// TestDashboardQueriesExist: every metric the shipped Grafana dashboard
// queries is one that apply --watch registers, in some mode (a histogram's
// _bucket, _sum and _count are its family's), so that no panel stays
// empty for a metric the tool lacks; and the ServiceMonitor selects the
// metrics Service by its labels and port.
func TestDashboardQueriesExist(t *testing.T) {
	registered := &describer{names: map[string]bool{}}
	for _, mode := range []string{svcmetrics.ModeIPTables, svcmetrics.ModeNFTables, svcmetrics.ModeIPVS} {
		newMetrics(mode, svcmetrics.Build{}).register(registered, mode, svcmetrics.Build{})
	}
	data, err := os.ReadFile("../../deploy/monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	queried := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, target := range p.Targets {
			names := promName.FindAllString(target.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: no metric in %q", p.Title, target.Expr)
			}
			for _, n := range names {
				queried++
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
				if !registered.names[n] && !registered.names[base] {
					t.Errorf("panel %q queries %s, which apply --watch does not register", p.Title, n)
				}
			}
		}
	}
	if queried < 20 {
		t.Errorf("the dashboard queries %d metrics; expected its 14 panels' worth", queried)
	}
	checkServiceMonitor(t)
}

// checkServiceMonitor: the ServiceMonitor's selector and port are the
// metrics Service's, and that Service selects the DaemonSet's pods.
func checkServiceMonitor(t *testing.T) {
	var svc struct {
		Metadata struct{ Labels map[string]string }
		Spec     struct {
			Selector map[string]string
			Ports    []struct {
				Name string
				Port int
			}
		}
	}
	var sm struct {
		Spec struct {
			Selector  struct{ MatchLabels map[string]string }
			Endpoints []struct{ Port string }
		}
	}
	var ds struct {
		Spec struct {
			Template struct {
				Metadata struct{ Labels map[string]string }
			}
		}
	}
	for path, v := range map[string]any{
		"../../deploy/monitoring/service.yaml":        &svc,
		"../../deploy/monitoring/servicemonitor.yaml": &sm,
		"../../deploy/base/daemonset.yaml":            &ds,
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Metadata.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service lacks", k, v)
		}
	}
	for k, v := range svc.Spec.Selector {
		if ds.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("the metrics Service selects %s=%s, which the DaemonSet's pods lack", k, v)
		}
	}
	ports := []string{}
	for _, p := range svc.Spec.Ports {
		if p.Port == 10249 {
			ports = append(ports, p.Name)
		}
	}
	if len(sm.Spec.Endpoints) != 1 || !slices.Contains(ports, sm.Spec.Endpoints[0].Port) {
		t.Errorf("the ServiceMonitor scrapes port %+v; the Service's port 10249 is %v", sm.Spec.Endpoints, ports)
	}
}
