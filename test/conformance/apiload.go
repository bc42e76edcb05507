package conformance

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// APILoad is what one proxy of a side-by-side run asked of the API server
// and received, from its start: its requests by HTTP method and status,
// as its own rest_client_requests_total counts them (kube-proxy's and
// the tool's have the same name and labels), the bodies of the answers
// (rest_client_response_size_bytes; a watch's stream is not in it), and
// every byte the API server sent through its bridge, TLS included.
type APILoad struct {
	Requests      map[string]float64 // by "METHOD code"
	ResponseBytes float64
	Received      int64
	Connections   int64 // TCP connections to the API server
}

// Total is the number of requests.
func (l APILoad) Total() float64 {
	var n float64
	for _, v := range l.Requests {
		n += v
	}
	return n
}

func (l APILoad) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l.Requests)) {
		parts = append(parts, fmt.Sprintf("%s: %.0f", k, l.Requests[k]))
	}
	return fmt.Sprintf("%.0f requests (%s), %.0f bytes of response bodies, %d bytes received on %d connections",
		l.Total(), strings.Join(parts, ", "), l.ResponseBytes, l.Received, l.Connections)
}

// apiLoad reads the proxy's load so far.
func (w *Watched) apiLoad(ctx context.Context) (APILoad, error) {
	body, err := w.scrape(ctx)
	if err != nil {
		return APILoad{}, err
	}
	l, err := ParseAPILoad(body)
	if w.bridge != nil {
		l.Received, l.Connections = w.bridge.Received(), w.bridge.Connections()
	}
	return l, err
}

// ParseAPILoad reads the request counts and response sizes of a /metrics
// exposition.
func ParseAPILoad(body []byte) (APILoad, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return APILoad{}, err
	}
	l := APILoad{Requests: map[string]float64{}}
	for _, m := range families["rest_client_requests_total"].GetMetric() {
		var method, code string
		for _, lp := range m.GetLabel() {
			switch lp.GetName() {
			case "method":
				method = lp.GetValue()
			case "code":
				code = lp.GetValue()
			}
		}
		l.Requests[method+" "+code] += m.GetCounter().GetValue()
	}
	for _, m := range families["rest_client_response_size_bytes"].GetMetric() {
		l.ResponseBytes += m.GetHistogram().GetSampleSum()
	}
	return l, nil
}

// receivedSlack is what the tool may receive above kube-proxy: the API
// server sends each watch a bookmark about once a minute, at times of its
// own, so two processes watching the same objects over the same seconds
// can differ by a bookmark or two.
const receivedSlack = 0.02

// CheckAPILoad fails unless the tool (p[1]) asked the API server for at
// most as much as kube-proxy (p[0]) over the same run: requests,
// connections, and bytes received (within receivedSlack).
func (p Pair) CheckAPILoad() error {
	kp, tool := p[0].API, p[1].API
	switch {
	case tool.Total() > kp.Total():
		return fmt.Errorf("the tool made %.0f requests to the API server, kube-proxy %.0f", tool.Total(), kp.Total())
	case tool.Connections > kp.Connections:
		return fmt.Errorf("the tool opened %d connections to the API server, kube-proxy %d", tool.Connections, kp.Connections)
	case float64(tool.Received) > float64(kp.Received)*(1+receivedSlack):
		return fmt.Errorf("the tool received %d bytes from the API server, kube-proxy %d", tool.Received, kp.Received)
	}
	return nil
}
