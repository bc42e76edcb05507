//go:build linux

package kernel

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// An exchange the kernel does not answer (a change sent without asking
// for an acknowledgement, awaited all the same) ends after the bound,
// with an error that says how long it waited, instead of blocking.
func TestExchangeIsBounded(t *testing.T) {
	lab := netlab.New(t)
	done := make(chan error, 1)
	go func() {
		done <- lab.Node().Do(func() error {
			c, err := dialNF(200 * time.Millisecond)
			if err != nil {
				return err
			}
			defer c.close()
			msgs, last := batch(func(e *nfnl.Encoder) {
				start := e.BeginMsg(nfnl.NFTablesType(unix.NFT_MSG_NEWTABLE), unix.NLM_F_REQUEST|unix.NLM_F_CREATE, unix.NFPROTO_INET, 0)
				e.PutString(unix.NFTA_TABLE_NAME, "unanswered")
				e.EndMsg(start)
			})
			return c.exchange("create table inet unanswered", msgs, last, false, nil)
		})
	}()
	select {
	case err := <-done:
		// The error names the bound that ended it; a wait without one
		// is caught below, as a hang.
		if err == nil || !strings.Contains(err.Error(), "did not answer within 200ms") {
			t.Errorf("an unanswered exchange: want an error naming the 200ms bound, got %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("an unanswered exchange still waits after 20 s")
	}
}

// The check claims its table exclusively: a marked one (a killed
// check's) is replaced, an unmarked one is refused and kept; Leftovers
// finds and removes the marked tables only.
func TestClaimTableAndLeftovers(t *testing.T) {
	lab := netlab.New(t)
	nft := func(args ...string) {
		t.Helper()
		if out, err := lab.Node().Run(t.Context(), "nft", args...); err != nil {
			t.Fatalf("nft %v: %v\n%s", args, err, out)
		}
	}
	err := lab.Node().Do(func() error {
		c, err := dialNF(netlinkWait)
		if err != nil {
			return err
		}
		defer c.close()
		first, err := c.claimTable()
		if err != nil {
			return err
		}
		second, err := c.claimTable() // as after a killed check
		if err != nil || second.handle == first.handle || !second.marked() {
			return errors.Join(err, errors.New("a marked table was not replaced"))
		}
		left, err := Leftovers(true, netlinkWait)
		if err != nil || !slices.Equal(left, []string{"inet " + TableName}) {
			return errors.Join(err, errors.New("Leftovers did not remove the marked table"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	nft("add", "table", "inet", TableName, "{ comment \"mine\" ; }")
	err = lab.Node().Do(func() error {
		c, err := dialNF(netlinkWait)
		if err != nil {
			return err
		}
		defer c.close()
		if _, err := c.claimTable(); err == nil || !strings.Contains(err.Error(), "not the tool's") {
			return errors.Join(err, errors.New("an unmarked table was claimed"))
		}
		if left, err := Leftovers(true, netlinkWait); err != nil || len(left) != 0 {
			return errors.Join(err, errors.New("Leftovers took an unmarked table"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	nft("list", "table", "inet", TableName)
}
