package nftables

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nsthread"
	_ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// testNS is a bare network namespace for one test: no interfaces but lo,
// no rules. Its name starts with netlab.NamePrefix, so `hack/netlab.sh
// clean` removes it if the test process dies.
type testNS struct {
	t    testing.TB
	name string
	h    netns.NsHandle
}

// newTestNS creates a namespace and removes it when the test ends. It
// skips the test (fails it under CI) without root or without the nft
// binary (which the tests use as the reference reader and writer).
func newTestNS(t testing.TB) *testNS {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "ip", "nft")
	name := fmt.Sprintf("%s%d-%08x-nft", netlab.NamePrefix, os.Getpid(), rand.Uint32())
	h, err := nsthread.NewNamed(name)
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		h.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return &testNS{t: t, name: name, h: h}
}

// open opens a Conn inside the namespace; it stays there for its life.
func (ns *testNS) open() *Conn {
	ns.t.Helper()
	var c *Conn
	err := ns.do(func() error {
		var err error
		c, err = Open()
		return err
	})
	if err != nil {
		ns.t.Fatal(err)
	}
	ns.t.Cleanup(func() { c.Close() })
	return c
}

// do runs fn on a thread switched into the namespace.
func (ns *testNS) do(fn func() error) error { return nsthread.Do(ns.h, fn) }

// nft runs the nft binary in the namespace with stdin and returns stdout.
func (ns *testNS) nft(stdin string, args ...string) (string, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns.name, "nft"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("nft %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	if stderr.Len() > 0 {
		return stdout.String(), fmt.Errorf("nft %s wrote to stderr: %s", strings.Join(args, " "), stderr.String())
	}
	return stdout.String(), nil
}

// mustNFT is nft that fails the test on error.
func (ns *testNS) mustNFT(stdin string, args ...string) string {
	ns.t.Helper()
	out, err := ns.nft(stdin, args...)
	if err != nil {
		ns.t.Fatal(err)
	}
	return out
}
