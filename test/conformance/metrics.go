package conformance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// ScrapeMetrics gets http://addr/metrics, dialling from inside ns, where
// kube-proxy and `kubectl svcproxy apply --watch` serve it on loopback.
func ScrapeMetrics(ctx context.Context, ns netlab.NS, addr string) ([]byte, error) {
	client := &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				var c net.Conn
				err := ns.Do(func() error {
					var err error
					c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
					return err
				})
				return c, err
			},
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// MetricSum adds up every series of metric name in a Prometheus text
// exposition, whatever its labels: kube-proxy labels its series with
// ip_family, the tool's have no labels. It is 0 when there is none
// (kube-proxy shows a labelled histogram only once it has a sample).
func MetricSum(body []byte, name string) float64 {
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		series, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, _, _ := strings.Cut(series, "{"); n != name {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			sum += v
		}
	}
	return sum
}
