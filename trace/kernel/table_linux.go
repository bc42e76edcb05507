package kernel

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// nftaTableHandle is NFTA_TABLE_HANDLE, which golang.org/x/sys/unix lacks:
// a table's handle, unique in its namespace and never reused, by which
// the check deletes the table it made and no other of the same name.
const nftaTableHandle = 4

// udataComment is the type of a comment in a table's userdata, as nft
// (libnftnl) lays it out: `nft list tables` shows it as the comment.
const udataComment = 0

// ownTable is an inet table as the check reads it.
type ownTable struct {
	name    string
	handle  uint64
	comment string
}

// marked says whether the table is one the check made.
func (t ownTable) marked() bool { return strings.HasPrefix(t.comment, TableMark) }

// inetTables lists the namespace's inet tables.
func (c *nfconn) inetTables() ([]ownTable, error) {
	var e nfnl.Encoder
	e.EndMsg(e.BeginMsg(nfnl.NFTablesType(unix.NFT_MSG_GETTABLE), unix.NLM_F_REQUEST|unix.NLM_F_DUMP, unix.NFPROTO_INET, 0))
	var out []ownTable
	err := c.exchange("list the inet tables", e.Buf, 0, true, func(m nfnl.Message) error {
		if m.Type != nfnl.NFTablesType(unix.NFT_MSG_NEWTABLE) {
			return nil
		}
		a, err := m.Attrs()
		if err != nil {
			return err
		}
		t := ownTable{name: a.String(unix.NFTA_TABLE_NAME), handle: nfnl.BE64(a[nftaTableHandle])}
		t.comment = nfnl.CString(udataGet(a[nfnl.NFTA_TABLE_USERDATA], udataComment))
		out = append(out, t)
		return nil
	})
	return out, err
}

// udataGet returns the value of the first userdata TLV of type typ.
func udataGet(b []byte, typ byte) []byte {
	for len(b) >= 2 && 2+int(b[1]) <= len(b) {
		if b[0] == typ {
			return b[2 : 2+int(b[1])]
		}
		b = b[2+int(b[1]):]
	}
	return nil
}

// createTable creates the check's table, marked as the tool's; it fails
// with EEXIST when a table of its name exists, whoever made it.
func (c *nfconn) createTable() error {
	comment := fmt.Sprintf("%s (pid %d); reset removes it if the trace was killed", TableMark, os.Getpid())
	msgs, last := batch(func(e *nfnl.Encoder) {
		start := e.BeginMsg(nfnl.NFTablesType(unix.NFT_MSG_NEWTABLE), unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK, unix.NFPROTO_INET, 0)
		e.PutString(unix.NFTA_TABLE_NAME, TableName)
		e.Put(nfnl.NFTA_TABLE_USERDATA, append([]byte{udataComment, byte(len(comment) + 1)}, append([]byte(comment), 0)...))
		e.EndMsg(start)
	})
	return c.exchange("create table inet "+TableName, msgs, last, false, nil)
}

// deleteTable deletes the inet table t by its handle.
func (c *nfconn) deleteTable(t ownTable) error {
	msgs, last := batch(func(e *nfnl.Encoder) {
		start := e.BeginMsg(nfnl.NFTablesType(unix.NFT_MSG_DELTABLE), unix.NLM_F_REQUEST|unix.NLM_F_ACK, unix.NFPROTO_INET, 0)
		e.PutU64(nftaTableHandle, t.handle)
		e.EndMsg(start)
	})
	err := c.exchange(fmt.Sprintf("delete table inet %s (handle %d)", t.name, t.handle), msgs, last, false, nil)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// claimTable creates the check's table and returns it. A table of its
// name that carries the tool's mark was left by a trace that was killed
// (the caller holds the run lock, so no trace is running): it is
// replaced. One without the mark is not the tool's, and stays.
func (c *nfconn) claimTable() (ownTable, error) {
	err := c.createTable()
	if errors.Is(err, unix.EEXIST) {
		t, found, ferr := c.findTable()
		switch {
		case ferr != nil:
			return ownTable{}, ferr
		case found && !t.marked():
			return ownTable{}, fmt.Errorf("table inet %s exists and is not the tool's (its comment does not start with %q): "+
				"--kernel will not touch it; rename or delete it to trace against the kernel", TableName, TableMark)
		case found:
			if err := c.deleteTable(t); err != nil {
				return ownTable{}, err
			}
		}
		err = c.createTable()
	}
	if err != nil {
		return ownTable{}, err
	}
	t, found, err := c.findTable()
	if err == nil && (!found || !t.marked()) {
		err = fmt.Errorf("table inet %s vanished or changed after it was created", TableName)
	}
	return t, err
}

// findTable finds the inet table named TableName.
func (c *nfconn) findTable() (ownTable, bool, error) {
	tables, err := c.inetTables()
	if err != nil {
		return ownTable{}, false, err
	}
	for _, t := range tables {
		if t.name == TableName {
			return t, true, nil
		}
	}
	return ownTable{}, false, nil
}

// Leftovers lists the inet tables that carry the check's mark. With
// remove it deletes them too; the caller then holds the run lock, which
// every trace --kernel holds while its table exists, so that a marked
// table is one a killed trace left. wait bounds each exchange with the
// kernel. A kernel without nf_tables has none.
func Leftovers(remove bool, wait time.Duration) ([]string, error) {
	c, err := dialNF(wait)
	if noNFTables(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer c.close()
	tables, err := c.inetTables()
	if noNFTables(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range tables {
		if !t.marked() {
			continue
		}
		if remove {
			if err := c.deleteTable(t); err != nil {
				return out, err
			}
		}
		out = append(out, "inet "+t.name)
	}
	return out, nil
}

// noNFTables says whether err is how a kernel without nfnetlink, or
// without nf_tables or its inet family, answers a request for its
// tables.
func noNFTables(err error) bool {
	for _, e := range []unix.Errno{unix.EINVAL, unix.EPROTONOSUPPORT, unix.EAFNOSUPPORT, unix.EOPNOTSUPP} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
