package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"time"
)

// resolve prints the addresses of name, sorted, and exits: 0 when the
// lookup succeeds, 1 when it fails. The agent is built without cgo, so
// this is Go's resolver reading /etc/resolv.conf, its nameservers,
// search path and ndots, as the pod's libc would.
func resolve(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	slices.Sort(addrs)
	for _, a := range addrs {
		fmt.Println(a)
	}
	os.Exit(0)
}

// cat copies a file to stdout and exits.
func cat(path string) {
	f, err := os.Open(path)
	if err == nil {
		_, err = io.Copy(os.Stdout, f)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
