package nfacct_test

import (
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nfacct"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// In a fresh network namespace the kernel answers nfacct, has none of
// kube-proxy's counters, and Ensure creates each once; another namespace
// does not see them.
func TestEnsureInNamespace(t *testing.T) {
	lab := netlab.New(t)
	node, client := lab.Node(), lab.Client()
	do := func(ns netlab.NS, fn func() error) {
		t.Helper()
		if err := ns.Do(fn); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(ns netlab.NS, name string) (ok bool) {
		t.Helper()
		do(ns, func() (err error) { ok, err = nfacct.Exists(name); return err })
		return ok
	}
	do(node, func() error {
		if !nfacct.Supported() {
			testenv.SkipOrFail(t, "nfacct: the kernel has no nfnetlink_acct")
		}
		return nil
	})
	for _, name := range nfacct.Counters {
		if exists(node, name) {
			t.Fatalf("%s exists in a fresh namespace", name)
		}
		do(node, func() error { return nfacct.Ensure(name) })
		do(node, func() error { return nfacct.Ensure(name) })
		if !exists(node, name) {
			t.Fatalf("Ensure did not create %s", name)
		}
		if exists(client, name) {
			t.Fatalf("%s leaked into another namespace", name)
		}
	}
}

func TestNames(t *testing.T) {
	for _, name := range []string{"", "a-name-that-is-longer-than-31-bytes"} {
		if _, err := nfacct.Exists(name); err == nil {
			t.Errorf("Exists(%q) took an invalid name", name)
		}
	}
}

// Packets reads a counter's packets from the kernel: 0 for a new one, an
// error for one that does not exist (the metric then has no sample).
func TestPacketsInNamespace(t *testing.T) {
	node := netlab.New(t).Node()
	err := node.Do(func() error {
		if !nfacct.Supported() {
			testenv.SkipOrFail(t, "nfacct: the kernel has no nfnetlink_acct")
		}
		if _, err := nfacct.Packets(nfacct.CTStateInvalidDropped); err == nil {
			t.Errorf("Packets of a counter that does not exist: no error")
		}
		if err := nfacct.Ensure(nfacct.CTStateInvalidDropped); err != nil {
			return err
		}
		n, err := nfacct.Packets(nfacct.CTStateInvalidDropped)
		if err != nil || n != 0 {
			t.Errorf("Packets of a new counter: %d, %v; want 0", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
