// Command pause is the pod sandbox's process in the substitute for
// registry.k8s.io/pause that hack/e2e-images.sh builds: it sleeps until
// SIGINT or SIGTERM, then exits 0, and reaps the zombies that it inherits
// as PID 1 of a pod that shares its process namespace. agnhost's pause
// subcommand is not enough: it exits 1 or 2 on those signals.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (kubectl-svcproxy's substitute for registry.k8s.io/pause)")
		return
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "pause: shutting down, got signal %v\n", sig)
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
