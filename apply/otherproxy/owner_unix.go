//go:build unix

package otherproxy

import (
	"os"
	"syscall"
)

// ownedBy reports whether the process directory dir belongs to uid (the
// process's effective user).
func ownedBy(dir string, uid uint32) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == uid
}
