package otherproxy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Kind is what answered on one of kube-proxy's ports.
type Kind int

const (
	// Silent: nothing answered (refused, timed out, or not HTTP).
	Silent Kind = iota
	// KubeProxy: an answer in kube-proxy's shape, without the tool's
	// Server header.
	KubeProxy
	// Self: the tool's own server (its Server header).
	Self
	// Other: some other HTTP server.
	Other
)

// Target is one of kube-proxy's endpoints to ask.
type Target struct {
	// URL is what is asked, such as http://127.0.0.1:10256/healthz.
	URL string
	// Metrics says the answer is a Prometheus text page; otherwise it
	// is kube-proxy's /healthz JSON.
	Metrics bool
}

// Answer is what one target answered.
type Answer struct {
	URL  string
	Kind Kind
}

// Signals are what the node said.
type Signals struct {
	// Processes are the PIDs of the kube-proxy processes in this
	// network namespace.
	Processes []int
	Answers   []Answer
}

// Verdict is Decide's reading of the signals.
type Verdict struct {
	// KubeProxy says that a kube-proxy runs on the node; Evidence says
	// what showed it, for the message.
	KubeProxy bool
	Evidence  []string
	// Self lists the URLs where the tool's own server answered.
	Self []string
}

// Decide reads the signals: a kube-proxy process, or an answer in
// kube-proxy's shape, each on its own, means a live kube-proxy. The
// tool's own answers and other servers' say nothing about kube-proxy.
func Decide(s Signals) Verdict {
	var v Verdict
	for _, pid := range s.Processes {
		v.Evidence = append(v.Evidence, fmt.Sprintf("process kube-proxy (pid %d)", pid))
	}
	for _, a := range s.Answers {
		switch a.Kind {
		case KubeProxy:
			v.Evidence = append(v.Evidence, a.URL+" answers as kube-proxy")
		case Self:
			v.Self = append(v.Self, a.URL)
		}
	}
	v.KubeProxy = len(v.Evidence) > 0
	return v
}

// String says what the verdict found, for a message.
func (v Verdict) String() string {
	if !v.KubeProxy {
		return "no kube-proxy"
	}
	return "kube-proxy runs on this node (" + strings.Join(v.Evidence, "; ") + ")"
}

// Config is what Probe asks.
type Config struct {
	Targets []Target
	// Timeout bounds each request (all run at once).
	Timeout time.Duration
	// SelfServer is the Server header of the tool's own servers.
	SelfServer string
	// Procfs is /proc (when empty), or a fake one in tests.
	Procfs string
}

// Probe reads the signals: the processes, and every target at once.
func Probe(ctx context.Context, cfg Config) (Signals, error) {
	var s Signals
	s.Answers = make([]Answer, len(cfg.Targets))
	var wg sync.WaitGroup
	for i, t := range cfg.Targets {
		wg.Go(func() {
			s.Answers[i] = Answer{URL: t.URL, Kind: ask(ctx, t, cfg.Timeout, cfg.SelfServer)}
		})
	}
	procfs := cfg.Procfs
	if procfs == "" {
		procfs = "/proc"
	}
	pids, err := Processes(procfs)
	wg.Wait()
	s.Processes = pids
	return s, err
}
