package savedplan

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func validPlan() *Plan {
	return &Plan{
		APIVersion: APIVersion, Kind: Kind, Node: "node1", Mode: "iptables", Backend: "iptables-nft",
		Host:     Host{Hostname: "h", BootID: "b", NetnsCookie: 7},
		Settings: map[string]string{"mode": "iptables"},
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
	if err := p.CheckChanges(ChangeDigest("# a comment\n+x\n context\n")); err != nil {
		t.Errorf("comments and context changed the digest: %v", err)
	}
	if err := p.CheckChanges(ChangeDigest("+y\n")); !errors.Is(err, ErrStale) {
		t.Errorf("another change set passed: %v", err)
	}
	if err := p.CheckBackend("iptables-legacy"); !errors.Is(err, ErrStale) {
		t.Errorf("another backend passed: %v", err)
	}
}
