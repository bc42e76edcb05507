package userspace

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestHealth(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	h := NewHealth(time.Minute)
	h.now = clk.now
	status := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		var body struct{ LastUpdated, CurrentTime time.Time }
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || !body.CurrentTime.Equal(clk.t) {
			t.Fatalf("body %q: %v", rec.Body, err)
		}
		return rec.Code
	}
	steps := []struct {
		what string
		do   func()
		want int
	}{
		{"before the first sync", func() {}, http.StatusServiceUnavailable},
		{"after the first sync", h.Updated, http.StatusOK},
		{"a change pending within the timeout", func() { h.Queued(); clk.t = clk.t.Add(59 * time.Second) }, http.StatusOK},
		{"a change pending longer than the timeout", func() { h.Queued(); clk.t = clk.t.Add(2 * time.Second) }, http.StatusServiceUnavailable},
		{"synced again", h.Updated, http.StatusOK},
		{"stopping", h.Stopping, http.StatusServiceUnavailable},
	}
	for _, s := range steps {
		s.do()
		if got := status(); got != s.want {
			t.Fatalf("%s: /healthz %d, want %d", s.what, got, s.want)
		}
	}
}
