package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

const kindServiceTrace = "ServiceTrace"

// serviceTrace is `trace --service`'s -o json|yaml: every cell of the
// reachability matrix.
type serviceTrace struct {
	typeMeta
	Mode    Mode         `json:"mode"`
	Service string       `json:"service"`
	Cells   []trace.Cell `json:"cells"`
}

// runService prints the reachability matrix of --service.
func (o *TraceOptions) runService(d *desired) error {
	ns, name, ok := strings.Cut(o.service, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("--service %q: must be NAMESPACE/NAME", o.service)
	}
	st := &serviceTrace{typeMeta: newTypeMeta(kindServiceTrace), Mode: d.mode, Service: o.service}
	found := false
	for _, f := range d.families {
		t := d.tables.ForFamily(f)
		var tr *tracer
		for i := range t.Ports {
			sp := &t.Ports[i]
			if sp.Name.Namespace != ns || sp.Name.Name != name {
				continue
			}
			found = true
			if tr == nil {
				var err error
				if tr, err = newTracer(d, f); err != nil {
					return err
				}
			}
			cells, err := trace.ServiceView(tr.ev, tr.node, sp)
			if err != nil {
				return err
			}
			st.Cells = append(st.Cells, cells...)
		}
	}
	if !found {
		return fmt.Errorf("Service %q: not found among the proxied Services of %v (headless and ExternalName Services are not proxied)", o.service, d.families)
	}
	if o.output != "text" {
		return writeData(o.streams.Out, o.output, st)
	}
	_, err := io.WriteString(o.streams.Out, trace.ServiceTable(st.Cells))
	return err
}
