package healthcheck

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// get serves one request through mux.
func get(mux http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// decodeV137 checks the headers of a V137 answer and decodes its body.
func decodeV137(t *testing.T, rec *httptest.ResponseRecorder) bodyV137 {
	t.Helper()
	if ct, nosniff := rec.Header().Get("Content-Type"), rec.Header().Get("X-Content-Type-Options"); ct != "application/json" || nosniff != "nosniff" {
		t.Errorf("headers Content-Type %q, X-Content-Type-Options %q", ct, nosniff)
	}
	var b bodyV137
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	return b
}

// TestV137 checks kube-proxy v1.37's /healthz and /livez: the body's
// fields and their meaning, the node's eligibility on /healthz only, and
// the count of answers by path and code.
func TestV137(t *testing.T) {
	const timeout = time.Minute
	clk := newClock()
	start := clk.t
	h := New(Options{Timeout: timeout, Now: clk.now, Families: []nodetable.Family{nodetable.IPv4, nodetable.IPv6}})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}
	counts := map[string]int{}
	mux := h.Mux(Serving{
		Node:     func() *corev1.Node { return node },
		Answered: func(path string, code int) { counts[path+" "+http.StatusText(code)]++ },
	})

	clk.t = clk.t.Add(time.Second)
	rec := get(mux, PathHealthz)
	b := decodeV137(t, rec)
	if rec.Code != http.StatusOK || !b.Healthy || b.NodeEligible == nil || !*b.NodeEligible ||
		!b.LastUpdated.Equal(clk.t) || !b.CurrentTime.Equal(clk.t) {
		t.Errorf("healthy: /healthz %d %s, want 200, healthy, eligible, lastUpdated = currentTime = now", rec.Code, rec.Body)
	}
	for _, f := range []nodetable.Family{nodetable.IPv4, nodetable.IPv6} {
		if s := b.Status[f]; !s.Healthy || !s.LastUpdated.Equal(start) {
			t.Errorf("status[%s] = %+v, want healthy, updated at the start %v", f, s, start)
		}
	}

	h.Queued()
	clk.t = clk.t.Add(timeout)
	rec = get(mux, PathHealthz)
	if b := decodeV137(t, rec); rec.Code != http.StatusServiceUnavailable || b.Healthy || !b.LastUpdated.Equal(start) || b.Status[nodetable.IPv4].Healthy {
		t.Errorf("late change: /healthz %d %s, want 503, unhealthy, lastUpdated the start", rec.Code, rec.Body)
	}
	rec = get(mux, PathLivez)
	if b := decodeV137(t, rec); rec.Code != http.StatusServiceUnavailable || b.Healthy || b.NodeEligible != nil {
		t.Errorf("late change: /livez %d %s, want 503 without nodeEligible", rec.Code, rec.Body)
	}
	h.Claim()
	h.Done(true)

	// A node tainted for deletion, being deleted or unknown fails
	// /healthz (load balancers drain it) but not /livez.
	deleted := metav1.Now()
	for what, n := range map[string]*corev1.Node{
		"tainted":  {Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}}},
		"deleting": {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}},
		"unknown":  nil,
	} {
		node = n
		rec := get(mux, PathHealthz)
		if b := decodeV137(t, rec); rec.Code != http.StatusServiceUnavailable || !b.Healthy || b.NodeEligible == nil || *b.NodeEligible {
			t.Errorf("%s node: /healthz %d %s, want 503, healthy, nodeEligible false", what, rec.Code, rec.Body)
		}
		rec = get(mux, PathLivez)
		if b := decodeV137(t, rec); rec.Code != http.StatusOK || b.NodeEligible != nil {
			t.Errorf("%s node: /livez %d %s, want 200 without nodeEligible", what, rec.Code, rec.Body)
		}
	}
	want := map[string]int{
		"/healthz OK": 1, "/healthz Service Unavailable": 4,
		"/livez OK": 3, "/livez Service Unavailable": 1,
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("answers %q counted %d times, want %d (all: %v)", k, counts[k], n, counts)
		}
	}
}

// TestV125 checks kube-proxy v1.25's /healthz, which userspace mode
// serves: healthy from the start, its own text body with Go's time
// format, no node check, no /livez.
func TestV125(t *testing.T) {
	const timeout = time.Minute
	clk := newClock()
	h := New(Options{Flavor: V125, Timeout: timeout, Now: clk.now})
	mux := h.Mux(Serving{
		Node:     func() *corev1.Node { t.Error("V125 asked for the node"); return nil },
		Answered: func(string, int) { t.Error("V125 counted an answer") },
	})
	check := func(what string, wantCode int, want string) {
		t.Helper()
		rec := get(mux, PathHealthz)
		if rec.Code != wantCode || rec.Body.String() != want {
			t.Errorf("%s: /healthz %d %q\nwant %d %q", what, rec.Code, rec.Body, wantCode, want)
		}
		if ct, nosniff := rec.Header().Get("Content-Type"), rec.Header().Get("X-Content-Type-Options"); ct != "application/json" || nosniff != "nosniff" {
			t.Errorf("%s: Content-Type %q, X-Content-Type-Options %q", what, ct, nosniff)
		}
	}
	check("at the start", http.StatusOK,
		`{"lastUpdated": "2026-01-01 00:00:00 +0000 UTC","currentTime": "2026-01-01 00:00:00 +0000 UTC"}`)
	h.Queued()
	clk.t = clk.t.Add(timeout)
	check("a change late", http.StatusServiceUnavailable,
		`{"lastUpdated": "2026-01-01 00:00:00 +0000 UTC","currentTime": "2026-01-01 00:01:00 +0000 UTC"}`)
	h.Claim()
	h.Done(true)
	clk.t = clk.t.Add(time.Second)
	check("synced", http.StatusOK,
		`{"lastUpdated": "2026-01-01 00:01:01 +0000 UTC","currentTime": "2026-01-01 00:01:01 +0000 UTC"}`)
	if rec := get(mux, PathLivez); rec.Code != http.StatusNotFound {
		t.Errorf("/livez answered %d, want 404: v1.25 had none", rec.Code)
	}
}
