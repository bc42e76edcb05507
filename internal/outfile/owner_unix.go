//go:build unix

package outfile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// linkOwnerRefusal is why the symbolic link fi is not followed, said of
// the link ("owned by uid 65534, ..."), or "": only a link that root or
// the running user owns is.
func linkOwnerRefusal(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if uid := uint32(os.Geteuid()); st.Uid != 0 && st.Uid != uid {
		return fmt.Sprintf("owned by uid %d, neither root nor the running user (uid %d)", st.Uid, uid)
	}
	return ""
}
