package iptables

import "testing"

func testOwnership() *Ownership {
	return &Ownership{
		Chains:      map[TableName][]string{Filter: {"KUBE-FORWARD", "KUBE-FIREWALL"}, NAT: {"KUBE-SERVICES"}},
		Prefixes:    map[TableName][]string{NAT: {"KUBE-SVC-"}},
		Shared:      []string{"KUBE-FIREWALL"},
		Unordered:   map[TableName][]string{NAT: {"KUBE-SERVICES"}},
		LastMarker:  "must be last",
		JumpMatches: []string{"comment", "conntrack"},
	}
}

func TestOwnershipOwns(t *testing.T) {
	o := testOwnership()
	for _, tc := range []struct {
		table TableName
		chain string
		want  bool
	}{
		{Filter, "KUBE-FORWARD", true},
		{NAT, "KUBE-FORWARD", false}, // owned per table
		{NAT, "KUBE-SVC-ABC", true},
		{Filter, "KUBE-SVC-ABC", false},
		{NAT, "KUBE-PROXY-CANARY", false},
		{Mangle, "KUBE-SERVICES", false},
	} {
		if got := o.Owns(tc.table, tc.chain); got != tc.want {
			t.Errorf("Owns(%s, %s) = %v, want %v", tc.table, tc.chain, got, tc.want)
		}
	}
	if !o.IsShared("KUBE-FIREWALL") || o.IsShared("KUBE-FORWARD") {
		t.Error("IsShared: only KUBE-FIREWALL is shared")
	}
	if !o.IsUnordered(NAT, "KUBE-SERVICES") || o.IsUnordered(NAT, "KUBE-SVC-ABC") {
		t.Error("IsUnordered: only nat KUBE-SERVICES is unordered")
	}
	if !o.MustBeLast(`-m comment --comment "x; must be last" -j KUBE-NODEPORTS`) || o.MustBeLast("-j KUBE-SVC-A") {
		t.Error("MustBeLast does not follow the marker")
	}
	if (&Ownership{}).MustBeLast("-j X") {
		t.Error("an empty marker marks every rule")
	}
}

// A rule in a built-in chain is owned only when it is a bare jump to an
// owned chain: a user's rule into a KUBE- chain with other matches, or with
// a match the mode does not use, stays foreign.
func TestOwnershipOwnsJump(t *testing.T) {
	o := testOwnership()
	for _, tc := range []struct {
		rule Rule
		want bool
	}{
		{`-m comment --comment "kubernetes service portals" -j KUBE-SERVICES`, true},
		{`-m conntrack --ctstate NEW -m comment --comment "x" -j KUBE-SERVICES`, true},
		{`-j KUBE-SERVICES`, true},
		{`-s 10.0.0.0/8 -j KUBE-SERVICES`, false},
		{`-m addrtype --dst-type LOCAL -j KUBE-SERVICES`, false}, // not one of this mode's matches
		{`-m comment --comment "x" -j KUBE-OTHER`, false},
		{`-m comment --comment "x" -j ACCEPT`, false},
		{`-m comment --comment "x" -m`, false},
	} {
		if got := o.OwnsJump(NAT, tc.rule); got != tc.want {
			t.Errorf("OwnsJump(%s) = %v, want %v", tc.rule, got, tc.want)
		}
	}
}
