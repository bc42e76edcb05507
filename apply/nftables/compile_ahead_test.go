package nftables

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// queueOneByOne is queueOps without compiling ahead.
func queueOneByOne(b *Batch, ops []op) error {
	for _, o := range ops {
		if err := addOp(b, o); err != nil {
			return err
		}
	}
	return nil
}

// TestCompileAheadIsOneByOne: a batch whose rules were compiled on another
// goroutine holds the same bytes as one compiled rule by rule, and stops
// at the same bad rule with the same error.
func TestCompileAheadIsOneByOne(t *testing.T) {
	tx := createTransaction(syntheticRuleset(5000, render.NFTablesLayoutCompact))
	probe := compileAhead(unix.NFPROTO_IPV4, tx.ops)
	if probe == nil {
		t.Fatalf("%d ops do not compile ahead; the test needs more than %d rules", len(tx.ops), compileAheadMin)
	}
	probe.done()
	queue := func(ops []op, fn func(*Batch, []op) error) ([]byte, error) {
		b := (&Conn{}).NewBatch(tx.family, tx.table)
		err := fn(b, ops)
		return b.enc.Buf, err
	}
	ahead, err := queue(tx.ops, queueOps)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := queue(tx.ops, queueOneByOne)
	if !bytes.Equal(ahead, plain) {
		t.Fatalf("compiled ahead, the batch is %d bytes; one by one, %d, and they differ", len(ahead), len(plain))
	}
	bad := append([]op(nil), tx.ops...)
	at := len(bad) - 3*compileChunk/2
	for bad[at].kind != opAddRule {
		at--
	}
	bad[at].rule = nft.Rule("meta l4proto tcp frobnicate")
	_, aheadErr := queue(bad, queueOps)
	_, plainErr := queue(bad, queueOneByOne)
	if aheadErr == nil || plainErr == nil || aheadErr.Error() != plainErr.Error() {
		t.Errorf("a bad rule: compiled ahead %v; one by one %v", aheadErr, plainErr)
	}
}
