// Package panicsite names where a recovered panic happened, so that an
// error can say so without the Go runtime's trace.
package panicsite

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// Of is " at function (file:line)" of the code that panicked, or "" when
// no panic is under way. Call it from the deferred function that
// recovers, while the panicking frames are still on the stack.
func Of() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic" || f.Function == "runtime.sigpanic" || strings.HasPrefix(f.Function, "runtime.panic"):
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return fmt.Sprintf(" at %s (%s:%d)", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}
