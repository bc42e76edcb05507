package iptables

import (
	"bytes"
	"context"
	"fmt"
)

// DetectBackend picks the backend the node's other components use, the
// way the iptables-wrapper script shipped in kube-proxy's image does:
//  1. the backend whose mangle table holds kubelet's KUBE-IPTABLES-HINT
//     or KUBE-KUBELET-CANARY chain;
//  2. otherwise the backend holding more rules;
//  3. otherwise nf_tables, the default of current distributions.
//
// Unlike the wrapper, it does not list legacy tables that do not exist yet:
// listing them would create them.
//
// A backend whose tools are missing is never chosen; if neither is
// installed, the error says so.
func DetectBackend(ctx context.Context, ex Execer) (Backend, error) {
	type probe struct {
		backend Backend
		hint    bool
		rules   int
		err     error
	}
	var probes []probe
	for _, b := range []Backend{NFT, Legacy} {
		p := probe{backend: b}
		if b == Legacy && !legacyTablesExist(ctx, ex) {
			// Listing legacy tables would create them; none exist, so
			// legacy holds no rules and no hint.
			if _, err := ex.Run(ctx, nil, "iptables-legacy-save", "--version"); err != nil {
				p.err = err
			}
			probes = append(probes, p)
			continue
		}
		for _, bin := range []string{"iptables", "ip6tables"} {
			mangle, err := ex.Run(ctx, nil, bin+"-"+string(b)+"-save", "-t", "mangle")
			if err != nil {
				p.err = err
				break
			}
			p.hint = p.hint || bytes.Contains(mangle, []byte(":KUBE-IPTABLES-HINT")) || bytes.Contains(mangle, []byte(":KUBE-KUBELET-CANARY"))
			all, err := ex.Run(ctx, nil, bin+"-"+string(b)+"-save")
			if err == nil {
				p.rules += bytes.Count(all, []byte("\n-A "))
			}
		}
		probes = append(probes, p)
	}
	var usable []probe
	for _, p := range probes {
		if p.err == nil {
			usable = append(usable, p)
		}
	}
	switch len(usable) {
	case 0:
		return "", fmt.Errorf("no usable iptables backend: %v; %v", probes[0].err, probes[1].err)
	case 1:
		return usable[0].backend, nil
	}
	nft, legacy := usable[0], usable[1]
	switch {
	case nft.hint != legacy.hint:
		if legacy.hint {
			return Legacy, nil
		}
		return NFT, nil
	case legacy.rules > nft.rules:
		return Legacy, nil
	}
	return NFT, nil
}

// ParseBackend reads a --iptables-backend value ("auto" is "").
func ParseBackend(s string) (Backend, error) {
	switch s {
	case "", "auto":
		return "", nil
	case "legacy":
		return Legacy, nil
	case "nft", "nf_tables":
		return NFT, nil
	}
	return "", fmt.Errorf("--iptables-backend %q: must be auto, legacy or nft", s)
}

// legacyTablesExist reports whether any x_tables table has been
// instantiated in the network namespace, without instantiating one.
func legacyTablesExist(ctx context.Context, ex Execer) bool {
	for _, f := range []string{"/proc/net/ip_tables_names", "/proc/net/ip6_tables_names"} {
		out, err := ex.Run(ctx, nil, "cat", f)
		if err == nil && len(bytes.TrimSpace(out)) > 0 {
			return true
		}
	}
	return false
}
