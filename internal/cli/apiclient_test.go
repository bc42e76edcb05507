package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// applyFor parses apply's flags from args and completes them, as the
// command does before it runs, and returns its client configuration's
// content types, QPS and burst.
func applyFor(t *testing.T, args ...string) (contentType, accept string, qps float32, burst int) {
	t.Helper()
	o := newApplyOptions(&common{streams: genericiooptions.NewTestIOStreamsDiscard()})
	cmd := &cobra.Command{Use: "apply"}
	o.input.addFlags(cmd.Flags())
	o.proxy.AddFlags(cmd.Flags())
	o.watch.addFlags(cmd.Flags())
	if err := cmd.Flags().Parse(append([]string{"--node-name=node1", "--server=https://127.0.0.1:1"}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(cmd, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.input.conn.restConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.ContentType, cfg.AcceptContentTypes, cfg.QPS, cfg.Burst
}

// TestAPIClientLikeKubeProxy: the client talks protobuf with kube-proxy's
// rate limit by default, takes clientConnection's contentType,
// acceptContentTypes, qps and burst from the config file, and kube-proxy's
// --kube-api-* flags win over the file.
func TestAPIClientLikeKubeProxy(t *testing.T) {
	config := writeConfig(t, "clientConnection:\n  contentType: application/json\n  acceptContentTypes: application/json\n  qps: 50\n  burst: 100\n")
	for _, c := range []struct {
		args       []string
		ct, accept string
		qps        float32
		burst      int
		what       string
	}{
		{nil, "application/vnd.kubernetes.protobuf", "", 5, 10, "defaults"},
		{[]string{"--config=" + config}, "application/json", "application/json", 50, 100, "config file"},
		{[]string{"--config=" + config, "--kube-api-qps=7", "--kube-api-burst=14", "--kube-api-content-type=application/vnd.kubernetes.protobuf"},
			"application/vnd.kubernetes.protobuf", "application/json", 7, 14, "flags over the file"},
		{[]string{"--config=" + writeConfig(t, "clientConnection:\n  qps: 0\n")}, "application/vnd.kubernetes.protobuf", "", 5, 10, "zeros in the file"},
	} {
		ct, accept, qps, burst := applyFor(t, c.args...)
		if ct != c.ct || accept != c.accept || qps != c.qps || burst != c.burst {
			t.Errorf("%s: content type %q, accept %q, qps %v, burst %d; want %q, %q, %v, %d",
				c.what, ct, accept, qps, burst, c.ct, c.accept, c.qps, c.burst)
		}
	}
}

// TestAPIRequestsAreProtobuf reads from an API server that records what
// it is asked: every request asks for protobuf, as kube-proxy's do.
func TestAPIRequestsAreProtobuf(t *testing.T) {
	var mu sync.Mutex
	var accepts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		accepts = append(accepts, r.URL.Path+": "+r.Header.Get("Accept"))
		mu.Unlock()
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	run(t, "", "render", "--node-name=node1", "--server="+srv.URL)
	mu.Lock()
	defer mu.Unlock()
	if len(accepts) == 0 {
		t.Fatal("no request reached the server")
	}
	for _, a := range accepts {
		if !strings.HasSuffix(a, ": application/vnd.kubernetes.protobuf, */*") {
			t.Errorf("request %s, want kube-proxy's Accept: application/vnd.kubernetes.protobuf, */*", a)
		}
	}
}

// A negative burst is refused, naming the flag.
func TestAPIBurstNegative(t *testing.T) {
	_, stderr, code := run(t, "", "render", "--node-name=node1", "--server=https://127.0.0.1:1", "--kube-api-burst=-1")
	if code != ExitError || !strings.Contains(stderr, "--kube-api-burst -1") {
		t.Errorf("exit %d, %q; want 2 naming --kube-api-burst", code, stderr)
	}
}
