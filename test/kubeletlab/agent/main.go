// Command agent is the one static program in the kubelet end-to-end
// test's images (test/kubeletlab), since no registry is reachable:
//
//	agent pause           sleep until SIGTERM or SIGINT (the sandbox image)
//	agent serve [ADDR]    serve HTTP on ADDR (default :8080): / answers the
//	                      host name (the pod's name), /stream answers it
//	                      again every 100 ms until the client goes away
//	agent get URL N [GAP] GET URL N times, each on a new connection, GAP
//	                      (a duration, default none) apart, and print each
//	                      answer on its own line ("error: ..." for a
//	                      failure); exits 0 unless N or GAP is bad
//	agent stream URL      GET URL once and copy the answer to stdout as it
//	                      comes; exits 1 when the connection breaks
//	agent resolve NAME    look NAME up with Go's own resolver, as a pod's
//	                      /etc/resolv.conf says (search path included), and
//	                      print its addresses, sorted, one a line; exits 1
//	                      when the lookup fails
//	agent cat FILE        copy FILE to stdout (the images hold no shell)
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "pause":
		pause()
	case "serve":
		addr := ":8080"
		if len(os.Args) > 2 {
			addr = os.Args[2]
		}
		serve(addr)
	case "get":
		if len(os.Args) != 4 && len(os.Args) != 5 {
			usage()
		}
		n, err := strconv.Atoi(os.Args[3])
		if err != nil || n < 1 {
			usage()
		}
		var gap time.Duration
		if len(os.Args) == 5 {
			if gap, err = time.ParseDuration(os.Args[4]); err != nil || gap < 0 {
				usage()
			}
		}
		get(os.Args[2], n, gap)
	case "stream":
		if len(os.Args) != 3 {
			usage()
		}
		stream(os.Args[2])
	case "resolve", "cat":
		if len(os.Args) != 3 {
			usage()
		}
		if os.Args[1] == "resolve" {
			resolve(os.Args[2])
		}
		cat(os.Args[2])
	default:
		usage()
	}
}

// stream copies one long answer to stdout until it ends.
func stream(url string) {
	resp, err := http.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_, err = io.Copy(os.Stdout, resp.Body)
	fmt.Fprintln(os.Stderr, "stream ended:", err)
	os.Exit(1)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: agent pause | serve [ADDR] | get URL N [GAP] | stream URL | resolve NAME | cat FILE")
	os.Exit(2)
}

// pause waits for SIGTERM or SIGINT, as a sandbox's pause process does.
func pause() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	<-ctx.Done()
}

func serve(addr string) {
	name, err := os.Hostname()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, name)
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		flusher, _ := w.(http.Flusher)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := fmt.Fprintln(w, name); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// get prints the answer of n GETs of url, each on a new connection so that
// each may reach another backend.
func get(url string, n int, gap time.Duration) {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}
	for i := range n {
		if i > 0 {
			time.Sleep(gap)
		}
		resp, err := client.Get(url)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(strings.TrimSpace(string(body)))
	}
}
