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
