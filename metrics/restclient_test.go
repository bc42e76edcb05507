package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Requests of a client made after RESTClient are counted under
// component-base's names and labels: by code, method and host, and their
// latency and response size by verb and host.
func TestRESTClientCountsRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(RESTClient()...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}`))
	}))
	defer srv.Close()
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	for range 2 {
		if _, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	u, _ := url.Parse(srv.URL)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			got[key] = m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	// The labels are component-base's; the buckets are its constants.
	for key, want := range map[string]float64{
		"rest_client_requests_total code=200 host=" + u.Host + " method=GET":     2,
		"rest_client_request_duration_seconds host=" + u.Host + " verb=GET":      2,
		"rest_client_response_size_bytes host=" + u.Host + " verb=GET":           2,
		"rest_client_rate_limiter_duration_seconds host=" + u.Host + " verb=GET": 2,
	} {
		if got[key] != want {
			t.Errorf("%s: %v, want %v (all: %v)", key, got[key], want, got)
		}
	}
}
