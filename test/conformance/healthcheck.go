package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// HTTPReply is one HTTP answer as a load balancer's health check sees
// it, or a refused connection.
type HTTPReply struct {
	Refused bool
	Code    int
	// Header holds every header but Date, which no two answers share.
	Header http.Header
	Body   string
}

func (r HTTPReply) String() string {
	if r.Refused {
		return "connection refused"
	}
	var h []string
	for k, v := range r.Header {
		h = append(h, k+": "+strings.Join(v, ","))
	}
	slices.Sort(h)
	return fmt.Sprintf("%d [%s] %q", r.Code, strings.Join(h, "; "), r.Body)
}

// Equal compares two replies: refused both, or the same status, headers
// and body.
func (r HTTPReply) Equal(o HTTPReply) bool { return r.String() == o.String() }

// GetInNS sends GET url from inside ns, on a connection of its own.
func GetInNS(ctx context.Context, ns netlab.NS, url string) (HTTPReply, error) {
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return HTTPReply{}, err
	}
	resp, err := client.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return HTTPReply{Refused: true}, nil
	}
	if err != nil {
		return HTTPReply{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return HTTPReply{}, err
	}
	resp.Header.Del("Date")
	return HTTPReply{Code: resp.StatusCode, Header: resp.Header, Body: string(body)}, nil
}

// healthTime is a quoted time as kube-proxy's health bodies write it:
// as encoding/json does (RFC 3339, v1.37), or as time.Time's String
// does, with the monotonic clock reading of time.Now (v1.25).
var healthTime = regexp.MustCompile(`"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)|` +
	` \d\d:\d\d:\d\d(\.\d+)? [+-]\d{4} [A-Za-z0-9+-]+( m=[+-]\d+\.\d+)?)"`)

// WithoutTimes replaces the times in a health body with "TIME", and drops
// Content-Length, which varies with their digits: what two health answers
// share when they differ only in when they were given.
func (r HTTPReply) WithoutTimes() HTTPReply {
	if r.Refused {
		return r
	}
	r.Header = r.Header.Clone()
	r.Header.Del("Content-Length")
	r.Body = healthTime.ReplaceAllString(r.Body, `"TIME"`)
	return r
}

// Unmarked drops the tool's Server header (healthcheck.ServerName) from
// one of its answers, after checking that the answer has it: the one
// header in which the tool's health answers differ from kube-proxy's on
// purpose, so that plan and apply can tell the tool's apply --watch from
// a live kube-proxy (docs/DEPLOY.md, "Another proxy on the node").
// kube-proxy's answers are compared as they are: a Server header there
// would differ, and would also blind that check.
func (r HTTPReply) Unmarked() (HTTPReply, error) {
	if r.Refused {
		return r, nil
	}
	if got := r.Header.Get("Server"); got != healthcheck.ServerName {
		return r, fmt.Errorf("the tool's answer has Server %q, want %q", got, healthcheck.ServerName)
	}
	r.Header = r.Header.Clone()
	r.Header.Del("Server")
	return r, nil
}
