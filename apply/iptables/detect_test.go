package iptables

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeTools answers iptables-*-save with canned dumps.
type fakeTools struct {
	dumps   map[string]string // "iptables-legacy-save -t mangle" -> output
	missing string            // a backend whose tools are not installed
	legacy  bool              // /proc/net/ip_tables_names lists tables
}

func (f fakeTools) Run(_ context.Context, _ []byte, name string, args ...string) ([]byte, error) {
	if f.missing != "" && strings.Contains(name, "-"+f.missing+"-") {
		return nil, errors.New(name + " not found")
	}
	if name == "cat" {
		if f.legacy && strings.HasSuffix(args[0], "/ip_tables_names") {
			return []byte("nat\n"), nil
		}
		return nil, nil
	}
	return []byte(f.dumps[strings.Join(append([]string{name}, args...), " ")]), nil
}

func TestDetectBackend(t *testing.T) {
	hint := "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n"
	rules := "*nat\n:X - [0:0]\n-A X -j ACCEPT\n-A X -j ACCEPT\nCOMMIT\n"
	cases := []struct {
		name string
		f    fakeTools
		want Backend
	}{
		{"nothing anywhere", fakeTools{}, NFT},
		{"kubelet's hint in legacy", fakeTools{legacy: true, dumps: map[string]string{"iptables-legacy-save -t mangle": hint}}, Legacy},
		{"kubelet's hint in nft", fakeTools{legacy: true, dumps: map[string]string{"iptables-nft-save -t mangle": hint, "iptables-legacy-save": rules}}, NFT},
		{"more rules in legacy", fakeTools{legacy: true, dumps: map[string]string{"iptables-legacy-save": rules}}, Legacy},
		{"legacy rules but no legacy tables listed", fakeTools{dumps: map[string]string{"iptables-legacy-save": rules}}, NFT},
		{"only legacy installed", fakeTools{missing: "nft"}, Legacy},
		{"only nft installed", fakeTools{missing: "legacy", legacy: true}, NFT},
	}
	for _, tc := range cases {
		got, err := DetectBackend(context.Background(), tc.f)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
