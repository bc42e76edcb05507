package conformance

import (
	"strings"
	"testing"
)

// ParseAPILoad adds the requests by method and code over hosts, and the
// response bodies; CheckAPILoad holds the tool to kube-proxy's load.
func TestAPILoad(t *testing.T) {
	body := []byte(`# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:1",method="GET"} 4
rest_client_requests_total{code="200",host="127.0.0.1:2",method="GET"} 1
rest_client_requests_total{code="201",host="127.0.0.1:1",method="POST"} 1
# TYPE rest_client_response_size_bytes histogram
rest_client_response_size_bytes_bucket{host="127.0.0.1:1",verb="GET",le="+Inf"} 2
rest_client_response_size_bytes_sum{host="127.0.0.1:1",verb="GET"} 300
rest_client_response_size_bytes_count{host="127.0.0.1:1",verb="GET"} 2
`)
	l, err := ParseAPILoad(body)
	if err != nil {
		t.Fatal(err)
	}
	if l.Requests["GET 200"] != 5 || l.Requests["POST 201"] != 1 || l.Total() != 6 || l.ResponseBytes != 300 {
		t.Errorf("parsed %s", l)
	}
	kp := APILoad{Requests: map[string]float64{"GET 200": 4, "POST 201": 1}, Received: 1000, Connections: 1}
	for _, c := range []struct {
		tool APILoad
		want string
	}{
		{APILoad{Requests: map[string]float64{"GET 200": 4}, Received: 1010, Connections: 1}, ""},
		{APILoad{Requests: map[string]float64{"GET 200": 6}, Received: 900, Connections: 1}, "requests"},
		{APILoad{Requests: map[string]float64{"GET 200": 4}, Received: 900, Connections: 4}, "connections"},
		{APILoad{Requests: map[string]float64{"GET 200": 4}, Received: 1100, Connections: 1}, "bytes"},
	} {
		err := Pair{{API: kp}, {API: c.tool}}.CheckAPILoad()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("tool %s: %v, want an error about %q", c.tool, err, c.want)
		}
	}
}
