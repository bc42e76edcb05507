package nftables

import "fmt"

// ApplyError reports a failed apply: the table whose transaction the
// kernel refused (so nothing of it changed), and whether the tables
// already written were put back.
type ApplyError struct {
	Family string
	Table  string
	Err    error
	// RollbackOK is set when earlier tables were written and then restored.
	RollbackOK bool
	Rollback   error
}

func (e *ApplyError) Error() string {
	msg := fmt.Sprintf("apply nftables table %s %s: %v", e.Family, e.Table, e.Err)
	switch {
	case e.Rollback != nil:
		return msg + fmt.Sprintf("; this table is unchanged, but undoing the tables already written failed: %v", e.Rollback)
	case e.RollbackOK:
		return msg + "; the tables already written were restored, nothing changed"
	}
	return msg + "; nothing was changed"
}

func (e *ApplyError) Unwrap() error { return e.Err }
