package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	applyipvs "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ipvs"
	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/example"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// nodeOnly is a cluster with a Node and nothing else: the render with the
// most empty lists.
const nodeOnly = `apiVersion: v1
kind: Node
metadata: {name: node1}
status:
  addresses: [{type: InternalIP, address: 192.168.77.10}, {type: InternalIP, address: "fd00::10"}]
`

// outputInputs returns the snapshots the machine output is checked on: the
// example, a Node alone, and every golden scenario's input.
func outputInputs(t *testing.T) map[string]string {
	t.Helper()
	inputs := map[string]string{"example": string(example.Snapshot), "node-only": nodeOnly}
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "golden", "*.txtar"))
	if len(paths) == 0 {
		t.Fatal("no golden scenarios")
	}
	for _, p := range paths {
		a, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			if f.Name == "input.yaml" {
				inputs[strings.TrimSuffix(filepath.Base(p), ".txtar")] = string(f.Data)
			}
		}
	}
	return inputs
}

// decodeOutput decodes JSON or YAML output into plain values.
func decodeOutput(t *testing.T, format, out string) map[string]any {
	t.Helper()
	data := []byte(out)
	if format == "yaml" {
		var err error
		if data, err = yaml.YAMLToJSON(data); err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, out)
		}
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("output is not a %s object: %v\n%s", format, err, out)
	}
	return v
}

// nulls returns the paths of the nulls in v.
func nulls(v any, path string) []string {
	switch v := v.(type) {
	case nil:
		return []string{path}
	case map[string]any:
		var out []string
		for k, x := range v {
			out = append(out, nulls(x, path+"."+k)...)
		}
		return out
	case []any:
		var out []string
		for i, x := range v {
			out = append(out, nulls(x, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	}
	return nil
}

// checkObject checks that an output is an object of kind, with no null.
func checkObject(t *testing.T, what string, v map[string]any, kind string) {
	t.Helper()
	if v["apiVersion"] != outputAPIVersion || v["kind"] != kind {
		t.Errorf("%s: apiVersion %v, kind %v; want %s, %s", what, v["apiVersion"], v["kind"], outputAPIVersion, kind)
	}
	if n := nulls(v, ""); len(n) > 0 {
		t.Errorf("%s: null at %s", what, strings.Join(n, ", "))
	}
}

// TestRenderOutputObject renders every input in every mode with -o json
// and -o yaml and checks that each is a RenderedRuleset without a null,
// whose rulesets are one per family.
func TestRenderOutputObject(t *testing.T) {
	for name, input := range outputInputs(t) {
		for _, mode := range allModes {
			for _, format := range []string{"json", "yaml"} {
				what := fmt.Sprintf("%s, %s, -o %s", name, mode, format)
				out, stderr, code := run(t, input, "render", "-f", "-", "--node-name=node1", "--mode="+string(mode), "-o", format)
				if code != ExitOK {
					t.Fatalf("%s: exit %d: %s", what, code, stderr)
				}
				v := decodeOutput(t, format, out)
				checkObject(t, what, v, kindRenderedRuleset)
				if rs, _ := v["rulesets"].([]any); v["mode"] != string(mode) || len(rs) != 2 {
					t.Errorf("%s: mode %v, %d rulesets; want %s and 2", what, v["mode"], len(rs), mode)
				}
			}
		}
	}
}

// fakeBackend names a backend for writePlan.
type fakeBackend struct {
	kernelBackend
	nameOf string
}

func (b fakeBackend) name() string { return b.nameOf }

// modePlans returns, for a render d, the plans of every kind of change
// without a kernel: from nothing to d (all new), from d to nothing (a
// reset), and from d to d (no changes).
func modePlans(d *desired) map[string]kernelPlan {
	plans := map[string]kernelPlan{}
	add := func(name string, p kernelPlan) { plans[name] = p }
	switch d.mode {
	case ModeIPTables, ModeUserspace:
		own := render.IPTablesOwnership()
		rs := d.iptables
		if d.mode == ModeUserspace {
			own, rs = render.UserspaceOwnership(), nil
			for _, u := range d.userspace {
				rs = append(rs, u.IPTables)
			}
		}
		build := func(from, to func(*ipt.Ruleset) *ipt.Ruleset) kernelPlan {
			var ps []*applyipt.Plan
			for _, r := range rs {
				ps = append(ps, &applyipt.Plan{Desired: to(r), Changes: diff.IPTables(to(r), from(r), own)})
			}
			return newIPTablesPlan("iptables-nft", d.mode, own, ps)
		}
		same := func(r *ipt.Ruleset) *ipt.Ruleset { return r }
		none := func(r *ipt.Ruleset) *ipt.Ruleset { return diff.EmptyIPTables(r.Family) }
		add("new", build(none, same))
		add("reset", build(same, none))
		add("same", build(same, same))
	case ModeNFTables:
		build := func(f func(*nft.Ruleset) *diff.NFTablesChangeSet) kernelPlan {
			var ps []*applynft.Plan
			for _, r := range d.nftables {
				ps = append(ps, &applynft.Plan{Family: r.Family, Changes: f(r)})
			}
			return newNFTPlan(ps)
		}
		add("new", build(func(r *nft.Ruleset) *diff.NFTablesChangeSet { return diff.NFTables(r, nil) }))
		add("reset", build(diff.DeleteNFTables))
		add("same", build(func(r *nft.Ruleset) *diff.NFTablesChangeSet { return diff.NFTables(r, r) }))
	case ModeIPVS:
		own := render.IPVSOwnership(nil)
		build := func(reset bool, from, to func(*ipvs.Ruleset) *ipvs.Ruleset) kernelPlan {
			var ps []*applyipvs.Plan
			for _, r := range d.ipvs {
				opts := diff.IPVSOptions{Reset: reset, DeviceExists: reset}
				ps = append(ps, &applyipvs.Plan{Desired: to(r), Changes: diff.IPVS(to(r), from(r), own, opts)})
			}
			return newIPVSPlan(ps, render.IPVSOwnership(nil))
		}
		same := func(r *ipvs.Ruleset) *ipvs.Ruleset { return r }
		none := func(r *ipvs.Ruleset) *ipvs.Ruleset { return diff.EmptyIPVS(r.Family) }
		add("new", build(false, none, same))
		add("reset", build(true, same, none))
		add("same", build(false, same, same))
	}
	return plans
}

// renderFor renders input in mode in process, for node1 in both families.
func renderFor(t *testing.T, input string, mode Mode) *desired {
	t.Helper()
	f := NewProxyFlags(allParts)
	f.Mode, f.NodeName = string(mode), "node1"
	if err := f.completeSettings(); err != nil {
		t.Fatal(err)
	}
	snap, err := cluster.Decode("input", []byte(input))
	if err != nil {
		t.Fatal(err)
	}
	c := &common{streams: genericiooptions.NewTestIOStreamsDiscard()}
	d, err := c.renderSnapshot(&f.settings, snap)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPlanOutputObject checks plan's -o json and -o yaml, as writePlan
// prints them, for plans of every kind in every mode computed without a
// kernel: each is a Plan without a null.
func TestPlanOutputObject(t *testing.T) {
	for name, input := range outputInputs(t) {
		for _, mode := range kernelModes {
			d := renderFor(t, input, mode)
			for kind, p := range modePlans(d) {
				for _, format := range []string{"json", "yaml"} {
					what := fmt.Sprintf("%s, %s, %s plan, -o %s", name, mode, kind, format)
					var out bytes.Buffer
					if err := (&PlanOptions{output: format}).writePlan(&out, planHead{mode: mode, backend: "test"}, p, nil); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					v := decodeOutput(t, format, out.String())
					checkObject(t, what, v, kindPlan)
					if sets, ok := v["changeSets"].([]any); v["mode"] != string(mode) || !ok || len(sets) != len(d.families) {
						t.Errorf("%s: mode %v, changeSets %v", what, v["mode"], v["changeSets"])
					}
				}
			}
		}
	}
}

// TestOutputDocumented checks that docs/OUTPUT.md names every field that
// the machine output holds or its types can hold, as `name` or as the last
// part of a path, `parent[].name`.
func TestOutputDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OUTPUT.md"))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	collect := func(what string, v any) {
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					fields[k] = what
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(v)
	}
	for name, input := range outputInputs(t) {
		for _, mode := range kernelModes {
			out, _, _ := run(t, input, "render", "-f", "-", "--node-name=node1", "--mode="+string(mode), "-o", "json")
			collect("render --mode="+string(mode), decodeOutput(t, "json", out))
			for kind, p := range modePlans(renderFor(t, input, mode)) {
				var buf bytes.Buffer
				if err := (&PlanOptions{output: "json"}).writePlan(&buf, planHead{mode: mode, backend: "test"}, p, nil); err != nil {
					t.Fatal(err)
				}
				collect(fmt.Sprintf("a %s plan, --mode=%s (%s)", kind, mode, name), decodeOutput(t, "json", buf.String()))
			}
		}
	}
	out, _, _ := run(t, "", "version", "-o", "json")
	collect("version", decodeOutput(t, "json", out))
	// The fields no output above happened to hold, from the Go types.
	for _, v := range []any{
		renderedRuleset{}, planReport{}, nodePlansReport{}, versionInfo{},
		[]*ipt.Ruleset{}, []*nft.Ruleset{}, []*ipvs.Ruleset{}, []*userspace.Ruleset{},
		diff.IPTablesChangeSet{}, diff.NFTablesChangeSet{}, diff.IPVSChangeSet{},
	} {
		outputJSONFields(reflect.TypeOf(v), fmt.Sprintf("%T", v), fields)
	}
	for field, where := range fields {
		if !bytes.Contains(doc, []byte("`"+field+"`")) && !bytes.Contains(doc, []byte("."+field+"`")) {
			t.Errorf("field %q (%s) is not documented in docs/OUTPUT.md", field, where)
		}
	}
}

// TestFillNil checks that fillNil fills nil lists and maps wherever they
// are reachable, and leaves alone what marshals itself and what is set.
func TestFillNil(t *testing.T) {
	type inner struct {
		List []string          `json:"list"`
		Map  map[string][]int  `json:"map"`
		Opt  []string          `json:"opt,omitempty"`
		Addr netip.Addr        `json:"addr,omitzero"`
		Arr  [2]*inner         `json:"arr"`
		Any  any               `json:"any"`
		Of   map[string]*inner `json:"of"`
		raw  []string
	}
	v := &inner{
		Map: map[string][]int{"a": nil},
		Arr: [2]*inner{{}, nil},
		Any: inner{},
		Of:  map[string]*inner{"x": {List: []string{"kept"}}},
	}
	fillNil(reflect.ValueOf(v))
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"list":[],"map":{"a":[]},` +
		`"arr":[{"list":[],"map":{},"arr":[null,null],"any":null,"of":{}},null],` +
		`"any":{"list":[],"map":{},"arr":[null,null],"any":null,"of":{}},` +
		`"of":{"x":{"list":["kept"],"map":{},"arr":[null,null],"any":null,"of":{}}}}`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
	if v.raw != nil {
		t.Error("an unexported field was filled")
	}
}

// jsonFields adds the JSON names of the struct fields that values of t
// can hold to fields, each with where it was found.
func outputJSONFields(t reflect.Type, where string, fields map[string]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || marshalsItself(t) {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || name == "-":
			continue
		case f.Anonymous && name == "":
			outputJSONFields(f.Type, where, fields)
			continue
		case name == "":
			name = f.Name
		}
		if _, seen := fields[name]; !seen {
			fields[name] = where + "." + f.Name
			outputJSONFields(f.Type, where+"."+f.Name, fields)
		}
	}
}
