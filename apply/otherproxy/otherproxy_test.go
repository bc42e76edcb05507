package otherproxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDecide reads every combination of the signals: either kube-proxy
// signal alone is enough, and the tool's own answers or a stranger's are
// not.
func TestDecide(t *testing.T) {
	hz, mx := "http://127.0.0.1:10256/healthz", "http://127.0.0.1:10249/metrics"
	for _, c := range []struct {
		name     string
		s        Signals
		live     bool
		evidence []string
		self     []string
	}{
		{"nothing", Signals{Answers: []Answer{{hz, Silent}, {mx, Silent}}}, false, nil, nil},
		{"process alone: ports elsewhere or starting", Signals{Processes: []int{42}, Answers: []Answer{{hz, Silent}}}, true, []string{"process kube-proxy (pid 42)"}, nil},
		{"health alone: another PID namespace", Signals{Answers: []Answer{{hz, KubeProxy}, {mx, Silent}}}, true, []string{hz + " answers as kube-proxy"}, nil},
		{"metrics alone", Signals{Answers: []Answer{{hz, Other}, {mx, KubeProxy}}}, true, []string{mx + " answers as kube-proxy"}, nil},
		{"the tool's own watch", Signals{Answers: []Answer{{hz, Self}, {mx, Self}}}, false, nil, []string{hz, mx}},
		{"a stranger on the ports", Signals{Answers: []Answer{{hz, Other}, {mx, Other}}}, false, nil, nil},
		{"process beside the tool's own ports", Signals{Processes: []int{7}, Answers: []Answer{{hz, Self}}}, true, []string{"process kube-proxy (pid 7)"}, []string{hz}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Decide(c.s)
			if v.KubeProxy != c.live || !slices.Equal(v.Evidence, c.evidence) || !slices.Equal(v.Self, c.self) {
				t.Errorf("Decide = %+v, want live %v, evidence %q, self %q", v, c.live, c.evidence, c.self)
			}
			if c.live && !strings.Contains(v.String(), "kube-proxy runs on this node") {
				t.Errorf("String() = %q", v.String())
			}
		})
	}
}

// The answers of kube-proxy v1.37 and v1.25 (lastUpdated is its own in
// each; the shape is what counts), of the tool, and of strangers.
const (
	healthzV137 = `{"lastUpdated":"2026-12-07 13:00:00.1 +0000 UTC m=+10.0","currentTime":"2026-12-07 13:00:01.2 +0000 UTC m=+11.0","nodeEligible":true,"healthy":true,"status":{"IPv4":{"lastUpdated":"2026-12-07T13:00:00Z","healthy":true}}}`
	healthzV125 = `{"lastUpdated": "2026-12-07 13:00:00.1 +0000 UTC m=+10.0","currentTime": "2026-12-07 13:00:01.2 +0000 UTC m=+11.0"}`
	metricsKP   = "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 80\n# HELP kubeproxy_sync_proxy_rules_endpoint_changes_total [ALPHA] Cumulative proxy rules Endpoint changes\n# TYPE kubeproxy_sync_proxy_rules_endpoint_changes_total counter\nkubeproxy_sync_proxy_rules_endpoint_changes_total 3\n"
	metricsGo   = "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 8\n"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name    string
		server  string
		code    int
		body    string
		metrics bool
		want    Kind
	}{
		{"kube-proxy v1.37 healthy", "", 200, healthzV137, false, KubeProxy},
		{"kube-proxy v1.37 unhealthy", "", 503, healthzV137, false, KubeProxy},
		{"kube-proxy v1.25", "", 200, healthzV125, false, KubeProxy},
		{"the tool's /healthz", "kubectl-svcproxy", 200, healthzV137, false, Self},
		{"another server's JSON", "", 200, `{"status":"ok"}`, false, Other},
		{"not JSON", "", 200, "ok", false, Other},
		{"kube-proxy's metrics", "", 200, metricsKP, true, KubeProxy},
		{"the tool's metrics", "kubectl-svcproxy", 200, metricsKP, true, Self},
		{"another exporter", "", 200, metricsGo, true, Other},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if c.server != "" {
					w.Header().Set("Server", c.server)
				}
				w.WriteHeader(c.code)
				fmt.Fprint(w, c.body)
			}))
			defer srv.Close()
			if got := ask(t.Context(), Target{URL: srv.URL + "/x", Metrics: c.metrics}, time.Second, "kubectl-svcproxy"); got != c.want {
				t.Errorf("ask = %v, want %v", got, c.want)
			}
		})
	}
}

// TestSilentAndRedirects: a port where nothing listens, one that accepts
// and never answers (the timeout ends the question: a wait without it
// would hang the test), and one that redirects to a kube-proxy elsewhere
// are all silent: only what answers on the port itself counts.
func TestSilentAndRedirects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"lastUpdated": "2026-12-07 10:00:00 +0000 UTC","currentTime": "2026-12-07 10:00:01 +0000 UTC","nodeEligible": true}`)
	}))
	defer elsewhere.Close()
	redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/healthz", http.StatusFound))
	defer redirect.Close()
	for name, url := range map[string]string{
		"closed port": "http://" + closed + "/healthz",
		"mute port":   "http://" + mute.Addr().String() + "/healthz",
		"redirect":    redirect.URL + "/healthz",
	} {
		if k := ask(t.Context(), Target{URL: url}, 100*time.Millisecond, "x"); k == KubeProxy {
			t.Errorf("%s: taken for kube-proxy", name)
		}
	}
	if k := ask(t.Context(), Target{URL: elsewhere.URL + "/healthz"}, time.Second, "x"); k != KubeProxy {
		t.Errorf("the redirect's target itself: %v, want kube-proxy (else the redirect case proves nothing)", k)
	}
}

// TestProcesses reads a fake procfs: only root's kube-proxy (here: the
// test's user's) in our network namespace counts; any user can name a
// process kube-proxy.
func TestProcesses(t *testing.T) {
	root := t.TempDir()
	proc := func(name, comm, netns string) {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if comm != "" {
			if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(comm+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if netns != "" {
			if err := os.Symlink(netns, filepath.Join(dir, "ns", "net")); err != nil {
				t.Fatal(err)
			}
		}
	}
	proc("self", "kubectl-svcpro", "net:[4026531840]")
	proc("10", "kube-proxy", "net:[4026531840]")   // ours
	proc("11", "kube-proxy", "net:[4026532000]")   // in another namespace
	proc("12", "kube-proxy", "")                   // a zombie: no namespace
	proc("13", "kube-proxy-x", "net:[4026531840]") // another program
	proc("9", "kube-proxy", "net:[4026531840]")    // ours
	proc("14", "", "net:[4026531840]")             // gone while read
	proc("15", "kube-proxy", "net:[4026531840]")   // another user's: see below
	saved := ownerUID
	ownerUID = uint32(os.Getuid())
	t.Cleanup(func() { ownerUID = saved })
	if os.Getuid() == 0 {
		if err := os.Chown(filepath.Join(root, "15"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
	} else {
		os.RemoveAll(filepath.Join(root, "15")) // only root can give it away
	}
	got, err := Processes(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{9, 10}; !slices.Equal(got, want) {
		t.Errorf("Processes = %v, want %v", got, want)
	}
	if _, err := Processes(filepath.Join(root, "missing")); err == nil {
		t.Error("a missing procfs is no error")
	}
}
