package otherproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxBody bounds what is read of an answer: kube-proxy's /healthz is a
// few hundred bytes, and its metrics name themselves in the first lines
// that are not Go's or the process's.
const maxBody = 1 << 20

// ask asks one target and says what answered.
func ask(ctx context.Context, t Target, timeout time.Duration, self string) Kind {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL, nil)
	if err != nil {
		return Silent
	}
	// No proxy from the environment, no connection kept: the question is
	// what listens on this node's port.
	// No redirect followed either: what answers elsewhere is not this
	// port's server, and the tool runs as root.
	client := &http.Client{
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return Silent
	}
	defer resp.Body.Close()
	return classify(resp, t.Metrics, self)
}

// classify names the server behind an answer: the tool's own by its
// Server header, kube-proxy's by the shape of its body.
func classify(resp *http.Response, metrics bool, self string) Kind {
	if self != "" && resp.Header.Get("Server") == self {
		return Self
	}
	body := io.LimitReader(resp.Body, maxBody)
	if metrics {
		if hasKubeProxyMetric(body) {
			return KubeProxy
		}
		return Other
	}
	if isHealthz(body) {
		return KubeProxy
	}
	return Other
}

// isHealthz says whether body is kube-proxy's /healthz: a JSON object
// with lastUpdated and currentTime, in every version (v1.25 quotes time
// strings; v1.37 adds healthy, status and nodeEligible).
func isHealthz(body io.Reader) bool {
	var v map[string]json.RawMessage
	if err := json.NewDecoder(body).Decode(&v); err != nil {
		return false
	}
	_, last := v["lastUpdated"]
	_, now := v["currentTime"]
	return last && now
}

// hasKubeProxyMetric says whether a Prometheus text page holds one of
// kube-proxy's own metrics (kubeproxy_...), in a sample or a HELP or
// TYPE line. A vector shows only once it has a sample, but kube-proxy
// v1.37 also registers plain ones that it shows from the start, such as
// kubeproxy_sync_proxy_rules_endpoint_changes_total.
func hasKubeProxyMetric(body io.Reader) bool {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimPrefix(sc.Text(), "# HELP "), "# TYPE ")
		if strings.HasPrefix(line, "kubeproxy_") {
			return true
		}
	}
	return false
}
