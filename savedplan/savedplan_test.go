package savedplan

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func validPlan() *Plan {
	return &Plan{
		APIVersion: APIVersion, Kind: Kind, Node: "node1", Mode: "iptables", Backend: "iptables-nft",
		Host:     Host{Hostname: "h", BootID: "b", NetnsCookie: 7},
		Settings: map[string]string{"mode": "iptables", "node-name": "node1"},
		Snapshot: []byte(`{"apiVersion":"v1","kind":"List","items":[]}`),
		Live:     []Table{{Name: "IPv4 filter", SHA256: "a"}, {Name: "IPv4 nat", SHA256: "b"}},
		Changes:  Changes{Summary: "s", SHA256: ChangeDigest("+x\n"), Diff: "+x\n"},
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := validPlan().Encode(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if p.Node != "node1" || len(p.Live) != 2 || p.Host.NetnsCookie != 7 {
		t.Fatalf("decoded %+v", p)
	}
}

func TestDecodeRefuses(t *testing.T) {
	var buf bytes.Buffer
	validPlan().Encode(&buf)
	good := buf.String()
	for name, tc := range map[string]struct{ text, want string }{
		"another version": {strings.Replace(good, APIVersion, "svcproxy.kubectl.io/v2", 1), "want svcproxy.kubectl.io/v1alpha1"},
		"another kind":    {strings.Replace(good, `"SavedPlan"`, `"Plan"`, 1), "kind"},
		"unknown field":   {strings.Replace(good, `"node":`, `"nodes": "x", "node":`, 1), `unknown field "nodes"`},
		"missing parts":   {`{"apiVersion":"` + APIVersion + `","kind":"SavedPlan"}`, "lacks backend, changes.sha256, live, mode, node, snapshot"},
		"trailing data":   {good + "{}", "not a saved plan"},
		"not JSON":        {"apply me", "not a saved plan"},
	} {
		if _, err := Decode([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %q", name, err, tc.want)
		}
	}
}

func TestChecks(t *testing.T) {
	p := validPlan()
	if err := p.CheckHost(p.Host); err != nil {
		t.Fatal(err)
	}
	for _, h := range []Host{{"x", "b", 7}, {"h", "x", 7}, {"h", "b", 8}} {
		if err := p.CheckHost(h); !errors.Is(err, ErrStale) {
			t.Errorf("host %+v: got %v", h, err)
		}
	}
	if err := p.CheckLive(p.Live); err != nil {
		t.Fatal(err)
	}
	err := p.CheckLive([]Table{{Name: "IPv4 nat", SHA256: "c"}, {Name: "IPv4 mangle", SHA256: "d"}})
	for _, want := range []string{"IPv4 nat", "IPv4 mangle (not in the plan)", "IPv4 filter (no longer read)"} {
		if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckLive: %v does not name %q", err, want)
		}
	}
	if err := p.CheckChanges("# a comment\n+x\n# another\n", p.ToolVersion); err != nil {
		t.Errorf("comments were taken for changes: %v", err)
	}
	if err := p.CheckChanges("+x\n context\n", p.ToolVersion); !errors.Is(err, ErrStale) {
		t.Errorf("a context line more passed: %v", err)
	}
	if err := p.CheckChanges("+y\n", p.ToolVersion); !errors.Is(err, ErrStale) {
		t.Errorf("another change set passed: %v", err)
	}
	if err := p.CheckChanges("+y\n", p.ToolVersion); err == nil || strings.Contains(err.Error(), "made by") {
		t.Errorf("the same version was blamed: %v", err)
	}
	if err := p.CheckChanges("+y\n", "v9.9.9"); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "made by kubectl-svcproxy "+p.ToolVersion+", this is v9.9.9") {
		t.Errorf("a plan of another version does not say so: %v", err)
	}
	if err := p.CheckChanges("# a comment\n+x\n", "v9.9.9"); err != nil {
		t.Errorf("another version's plan with the same changes was refused: %v", err)
	}
	if err := p.CheckBackend("iptables-legacy"); !errors.Is(err, ErrStale) {
		t.Errorf("another backend passed: %v", err)
	}
}

// The lines planned now must be the plan text's, line for line, context
// lines included; the error names the first line of each side that
// differs.
func TestCompareChanges(t *testing.T) {
	reviewed := "--- live IPv4\n+++ desired IPv4\n@@ nat A: changed @@\n-old\n+new\n keep\n ...\n# note\n"
	for name, tc := range map[string]struct{ now, want string }{
		"the same":          {reviewed, ""},
		"other comments":    {strings.Replace(reviewed, "# note", "# other", 1), ""},
		"a comment more":    {reviewed + "# more\n", ""},
		"a line more":       {reviewed + "+more\n", `change line 8: the plan file shows no more changes, planned now: "+more"`},
		"a line less":       {strings.Replace(reviewed, "-old\n", "", 1), `change line 4: the plan file shows "-old", planned now: "+new"`},
		"another line":      {strings.Replace(reviewed, "+new", "+DNAT 6.6.6.6", 1), `change line 5: the plan file shows "+new", planned now: "+DNAT 6.6.6.6"`},
		"another hunk":      {strings.Replace(reviewed, "@@ nat A", "@@ nat B", 1), `change line 3`},
		"context to change": {strings.Replace(reviewed, " keep", "+keep", 1), `change line 6`},
		"other context":     {strings.Replace(reviewed, " keep", " kept", 1), `change line 6: the plan file shows " keep", planned now: " kept"`},
		"no cut":            {strings.Replace(reviewed, " ...\n", "", 1), `change line 7: the plan file shows " ...", planned now: no more changes`},
	} {
		err := CompareChanges(reviewed, tc.now)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", name, err)
		case tc.want != "" && (!errors.Is(err, ErrStale) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error naming %s", name, err, tc.want)
		}
	}
}

// A changed chain is written whole, and in iptables and nftables the
// order of its rules is their meaning: a rule added at another place among
// the unchanged ones is another change, though its "+" line is the same.
func TestCompareChangesRuleOrder(t *testing.T) {
	if err := CompareChanges(" A\n+X\n B", "+X\n A\n B"); !errors.Is(err, ErrStale) ||
		!strings.Contains(err.Error(), `change line 1: the plan file shows " A", planned now: "+X"`) {
		t.Errorf("X added before A, the text showing it after: got %v", err)
	}
	head := "@@ nat KUBE-SERVICES: changed @@\n"
	reviewed := head + " -A KUBE-SERVICES -d 10.96.0.10/32 -j KUBE-SVC-A\n+-A KUBE-SERVICES -j DROP\n -A KUBE-SERVICES -j KUBE-NODEPORTS\n"
	now := head + "+-A KUBE-SERVICES -j DROP\n -A KUBE-SERVICES -d 10.96.0.10/32 -j KUBE-SVC-A\n -A KUBE-SERVICES -j KUBE-NODEPORTS\n"
	if err := CompareChanges(reviewed, now); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "change line 2") {
		t.Errorf("a DROP moved before a Service's rule: got %v", err)
	}
	if ChangeDigest(reviewed) == ChangeDigest(now) {
		t.Error("the digest does not tell the two orders apart")
	}
}

// An ipvs plan prints a draining real server's connection counts in a
// comment, not in its context line: counts that moved between plan and
// apply, with nothing else changed, are the same plan.
func TestCompareChangesConnectionCounts(t *testing.T) {
	text := func(active, inactive int) string {
		return "--- live IPv4 (kernel)\n+++ desired IPv4\n@@ ipvs -t 10.96.0.20:80: draining @@\n" +
			" -a -t 10.96.0.20:80 -r 10.244.1.13:8080 -m -w 0\n" +
			"# draining: " + strconv.Itoa(active) + " active, " + strconv.Itoa(inactive) + " inactive connections; deleted once they close\n" +
			"@@ ipvs -t 10.96.0.30:80: real servers changed @@\n+-a -t 10.96.0.30:80 -r 10.244.0.7:8080 -m -w 1\n"
	}
	if err := CompareChanges(text(7, 3), text(2, 0)); err != nil {
		t.Errorf("only the connection counts moved: refused: %v", err)
	}
	other := strings.Replace(text(7, 3), "10.244.1.13:8080 -m -w 0", "10.244.1.14:8080 -m -w 0", 1)
	if err := CompareChanges(other, text(7, 3)); !errors.Is(err, ErrStale) {
		t.Errorf("another draining real server: got %v", err)
	}
}

// The digest stored in the file is checked against the file's own text,
// never trusted instead of it.
func TestDecodeRefusesAnotherDigest(t *testing.T) {
	p := validPlan()
	p.Changes.Diff = "+x\n+y\n"
	var buf bytes.Buffer
	p.Encode(&buf)
	if _, err := Decode(buf.Bytes()); !errors.Is(err, ErrEdited) || !strings.Contains(err.Error(), "changes.sha256 is not the digest") {
		t.Errorf("a text edited under its digest passed: %v", err)
	}
	p.Changes.SHA256 = ChangeDigest(p.Changes.Diff)
	if err := p.CheckChanges("+x\n", p.ToolVersion); !errors.Is(err, ErrStale) {
		t.Errorf("a text that shows more than planned now passed: %v", err)
	}
}

// A plan's top-level mode and node are what its settings say, or it is
// refused as edited.
func TestDecodeRefusesDisagreeingSettings(t *testing.T) {
	for name, edit := range map[string]func(*Plan){
		"mode":          func(p *Plan) { p.Mode = "nftables" },
		"settings mode": func(p *Plan) { p.Settings["mode"] = "ipvs" },
		"node":          func(p *Plan) { p.Node = "node2" },
		"no node-name":  func(p *Plan) { delete(p.Settings, "node-name") },
	} {
		p := validPlan()
		edit(p)
		var buf bytes.Buffer
		p.Encode(&buf)
		if _, err := Decode(buf.Bytes()); !errors.Is(err, ErrEdited) {
			t.Errorf("%s: got %v, want it refused as edited", name, err)
		}
	}
}
