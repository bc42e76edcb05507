package nftables

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// FakeKernel is nf_tables in memory: a kernel (client.go) for the tests
// of the Client's decisions, which need no root. A transaction is encoded
// as Conn encodes it (an operation the codec refuses fails here too, and
// Plan.Ops counts the same objects), checked operation by operation as the
// kernel checks it (fake_replay_linux_test.go) and applied entirely or not
// at all: its operations become change sets that diff.ReplayNFTables
// applies to the table. Each committed transaction, the client's or
// another writer's (Edit), moves the generation by one.
//
// The hooks inject what a healthy kernel does not do on demand: a refused
// commit, a failing read, another writer's commit while a table is read.
// Set them before the client uses the kernel.
type FakeKernel struct {
	mu     sync.Mutex
	gen    uint32
	cookie uint64
	tables map[tableKey]*nft.Ruleset
	sent   []FakeTx
	reads  int

	// BeforeCommit runs before each transaction is applied. An error it
	// returns refuses the transaction, which changes nothing: an errno
	// as the kernel refuses (a *TransactionError that wraps it), anything
	// else as a failed send. It may Edit, as another writer would.
	BeforeCommit func(tx FakeTx) error
	// DuringRead runs in each ReadTable after the table was taken, before
	// the read returns it: an Edit there is a commit that raced the read.
	DuringRead func(family nft.Family, table string)
	// ReadErr fails every ReadTable; GenErr every read of the generation.
	ReadErr, GenErr error
}

// FakeTx is one transaction a client sent: its table, its operations as
// Script spells them, and the kernel's answer (nil: committed).
type FakeTx struct {
	Family nft.Family
	Table  string
	Script string
	Err    error
}

// fakeCookies numbers the fakes' network namespaces: no two fakes share
// one, as no two namespaces do.
var fakeCookies atomic.Uint64

// NewFakeKernel is an empty namespace at generation 1.
func NewFakeKernel() *FakeKernel {
	return &FakeKernel{gen: 1, cookie: 1000 + fakeCookies.Add(1), tables: map[tableKey]*nft.Ruleset{}}
}

// Client is a new client of the tables own names, on k.
func (k *FakeKernel) Client(own *nft.Ownership) *Client { return newClient(k, own) }

// Table is a copy of a table as k holds it; nil when it has none.
func (k *FakeKernel) Table(family nft.Family, table string) *nft.Ruleset {
	k.mu.Lock()
	defer k.mu.Unlock()
	return cloneTable(k.tables[tableKey{family, table}])
}

// Edit is another writer's transaction on one table: edit gets a copy of
// it (nil: none) and returns what the table becomes (nil: none).
func (k *FakeKernel) Edit(family nft.Family, table string, edit func(*nft.Ruleset) *nft.Ruleset) {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := tableKey{family, table}
	if rs := edit(cloneTable(k.tables[key])); rs != nil {
		rs.SortElements()
		k.tables[key] = rs
	} else {
		delete(k.tables, key)
	}
	k.gen++
}

// Generation is k's generation ID.
func (k *FakeKernel) Generation() uint32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gen
}

// Sent lists the transactions clients sent, refused ones included.
func (k *FakeKernel) Sent() []FakeTx {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.sent)
}

// Reads counts the ReadTable calls.
func (k *FakeKernel) Reads() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reads
}

// ReadTable is the table's state; a read and its DuringRead hook.
func (k *FakeKernel) ReadTable(family nft.Family, table string) (*nft.Ruleset, error) {
	if _, err := familyNumber(family); err != nil {
		return nil, err
	}
	k.mu.Lock()
	if k.ReadErr != nil {
		k.mu.Unlock()
		return nil, k.ReadErr
	}
	k.reads++
	rs := cloneTable(k.tables[tableKey{family, table}])
	k.mu.Unlock()
	if k.DuringRead != nil {
		k.DuringRead(family, table)
	}
	return rs, nil
}

func (k *FakeKernel) generation() (uint32, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gen, k.GenErr
}

func (k *FakeKernel) netnsCookie() (uint64, error) { return k.cookie, nil }

// Close does nothing: the fake has no socket.
func (k *FakeKernel) Close() error { return nil }

// commit encodes tx as Conn.commit does, lets BeforeCommit refuse it, and
// applies it as one transaction.
func (k *FakeKernel) commit(tx transaction) (int, error) {
	b, err := encodeTransaction(nil, tx)
	if err != nil {
		return 0, err
	}
	ops := b.Ops()
	b.Release()
	if ops == 0 {
		return 0, nil // Batch.Commit sends nothing
	}
	sent := FakeTx{Family: tx.family, Table: tx.table, Script: txScript(tx)}
	if k.BeforeCommit != nil {
		if err := k.BeforeCommit(sent); err != nil {
			err = refusal(tx, "commit", err)
			k.log(sent, err)
			return 0, err
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	key := tableKey{tx.family, tx.table}
	next, err := replayTransaction(k.tables[key], tx)
	sent.Err = err
	k.sent = append(k.sent, sent)
	if err != nil {
		return 0, err
	}
	if next == nil {
		delete(k.tables, key)
	} else {
		k.tables[key] = next
	}
	k.gen++
	return ops, nil
}

func (k *FakeKernel) log(tx FakeTx, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	tx.Err = err
	k.sent = append(k.sent, tx)
}

// refusal is err as Commit returns it: an errno as the kernel's refusal
// of the operation what, anything else as a failed send.
func refusal(tx transaction, what string, err error) error {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("nftables: send transaction on table %s %s: %w", tx.family, tx.table, err)
	}
	return &TransactionError{Family: string(tx.family), Table: tx.table,
		Failures: []error{&opError{op: what, err: &kernelError{errno: errno}}}}
}

// txScript is tx's operations as Script writes them.
func txScript(tx transaction) string {
	var b strings.Builder
	writeScript(&b, tx)
	return b.String()
}

// cloneTable copies rs down to its element and rule slices, with its
// elements sorted, as a read of the kernel returns a table of its own.
func cloneTable(rs *nft.Ruleset) *nft.Ruleset {
	if rs == nil {
		return nil
	}
	c := *rs
	c.Sets = make([]*nft.Set, len(rs.Sets))
	for i, s := range rs.Sets {
		cs := *s
		cs.Flags = slices.Clone(s.Flags)
		cs.Elements = slices.Clone(s.Elements)
		c.Sets[i] = &cs
	}
	c.Chains = make([]*nft.Chain, len(rs.Chains))
	for i, ch := range rs.Chains {
		cc := *ch
		if ch.Base != nil {
			b := *ch.Base
			cc.Base = &b
		}
		cc.Rules = slices.Clone(ch.Rules)
		c.Chains[i] = &cc
	}
	c.SortElements()
	return &c
}
