package watch

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// clock is a settable time for the health state.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// get serves one request and decodes the JSON body.
func get(t *testing.T, h http.Handler) (int, healthStatus) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	var st healthStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	return rec.Code, st
}

func TestHealthFollowsPendingChanges(t *testing.T) {
	const timeout = 60 * time.Second
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	start := clk.t
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}
	h := newHealth(timeout, clk.now, func() *corev1.Node { return node })
	m := newMetrics()
	healthz, livez := h.handler(true, m.healthz), h.handler(false, m.livez)

	step := func(what string, d time.Duration, wantCode int) healthStatus {
		t.Helper()
		clk.t = clk.t.Add(d)
		code, st := get(t, healthz)
		if code != wantCode || st.Healthy != (wantCode == http.StatusOK) || !st.CurrentTime.Equal(clk.t) {
			t.Fatalf("%s: /healthz %d %+v, want %d at %v", what, code, st, wantCode, clk.t)
		}
		return st
	}
	// Starting up: healthy until the initial sync is late.
	step("waiting for the caches", timeout-time.Second, http.StatusOK)
	if st := step("initial sync late", time.Second, http.StatusServiceUnavailable); !st.LastUpdated.Equal(start) {
		t.Errorf("lastUpdated %v while unhealthy, want the start %v", st.LastUpdated, start)
	}

	// A sync succeeds; a healthy answer says "updated now", as kube-proxy's.
	h.claim()
	h.done(true)
	if st := step("synced", 0, http.StatusOK); !st.LastUpdated.Equal(clk.t) {
		t.Errorf("lastUpdated %v while healthy, want now %v", st.LastUpdated, clk.t)
	}
	// Nothing pending: healthy however long no sync runs (an API outage).
	step("idle", 10*timeout, http.StatusOK)

	// A change arrives; its sync fails; it stays pending from its arrival.
	h.queued()
	queuedAt := clk.t
	step("change queued", timeout/2, http.StatusOK)
	h.claim()
	h.queued() // another change during the failing sync
	step("sync running, change late", timeout/2, http.StatusServiceUnavailable)
	h.done(false)
	step("sync failed", 0, http.StatusServiceUnavailable)
	if h.pendingSince != queuedAt {
		t.Errorf("pending since %v, want the first change at %v", h.pendingSince, queuedAt)
	}
	h.claim()
	h.done(true)
	step("retry succeeded", 0, http.StatusOK)

	// A Node tainted for deletion fails /healthz (load balancers drain it)
	// but not /livez.
	node.Spec.Taints = []corev1.Taint{{Key: toBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
	code, st := get(t, healthz)
	if code != http.StatusServiceUnavailable || st.NodeEligible == nil || *st.NodeEligible || !st.Healthy {
		t.Errorf("tainted node: /healthz %d %+v, want 503 with nodeEligible false", code, st)
	}
	if code, st := get(t, livez); code != http.StatusOK || st.NodeEligible != nil {
		t.Errorf("tainted node: /livez %d %+v, want 200 without nodeEligible", code, st)
	}
	if got := gathered(t, m, metricHealthz, "code", "503"); got != 4 {
		t.Errorf("%s{code=503} = %v, want 4", metricHealthz, got)
	}
}
