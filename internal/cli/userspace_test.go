package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestUserspaceExhaustedRangeWarnsPerPort checks that a proxy port range
// too small for the Service ports says which Service ports got no proxy
// port, one warning each, as kube-proxy v1.25 logged an error for each
// port it could not allocate; the tool once left them out in silence
// (issue 33: 2 of 9 portals written, nothing said).
func TestUserspaceExhaustedRangeWarnsPerPort(t *testing.T) {
	out, stderr, code := run(t, "", "render", "--example", "--mode=userspace", "--family=ipv4", "--proxy-port-range=100-101", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Rulesets []struct {
			Ports []struct {
				Name struct {
					Namespace, Name, Port, Protocol string
				}
				ProxyPort int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var unallocated []string
	for _, p := range doc.Rulesets[0].Ports {
		if p.ProxyPort == 0 {
			unallocated = append(unallocated, fmt.Sprintf("warning: service port %s/%s:%s/%s: no proxy port left in the proxy port range 100-101",
				p.Name.Namespace, p.Name.Name, p.Name.Port, strings.ToLower(p.Name.Protocol)))
		}
	}
	if len(unallocated) == 0 {
		t.Fatal("every Service port got a proxy port from 2 ports")
	}
	for _, want := range unallocated {
		if !strings.Contains(stderr, want) {
			t.Errorf("no warning %q in:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, "no proxy port left"); n != len(unallocated) {
		t.Errorf("%d warnings for %d Service ports without a proxy port:\n%s", n, len(unallocated), stderr)
	}
	// A range with room for all says nothing.
	if _, stderr, _ := run(t, "", "render", "--example", "--mode=userspace", "--family=ipv4"); strings.Contains(stderr, "no proxy port") {
		t.Errorf("the default range warns: %s", stderr)
	}
}
