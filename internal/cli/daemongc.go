package cli

import (
	"os"
	"runtime/debug"
)

// daemonGCPercent is the garbage collector's GOGC in watch mode. Go's
// default, 100, lets the heap grow to twice what is live before it
// collects; a node agent's memory is what it keeps at its peak, so watch
// mode collects at one and a half times instead, for somewhat more CPU.
// docs/PERFORMANCE.md has the figures.
const daemonGCPercent = 50

// tuneDaemonGC sets daemonGCPercent, unless GOGC in the environment says
// otherwise.
func tuneDaemonGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(daemonGCPercent)
	}
}
