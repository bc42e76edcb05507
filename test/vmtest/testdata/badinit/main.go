// Command badinit is a broken guest init for the harness's own tests: each
// mode (the first argument after "--" on the kernel command line) is one
// way a guest can fail to give a trustworthy result.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

func main() {
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "panic": // init dies: a kernel panic
		panic("badinit: init panics on purpose")
	case "nomarker": // a clean exit code 0, but no result line
		vmtest.ExitDevice(0)
	case "wrongcode": // a result line that qemu's exit status contradicts
		fmt.Printf("\nVMTEST-RESULT %s exit=0\n", os.Getenv("vmtestnonce"))
		vmtest.ExitDevice(1)
	case "hang": // sleeps (select{} would be Go's deadlock error)
		for {
			time.Sleep(time.Hour)
		}
	}
	fmt.Printf("badinit: unknown mode %q\n", mode)
	vmtest.ExitDevice(0)
}
