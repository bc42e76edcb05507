package healthcheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// ServiceServer serves the Services' health check node ports, as
// kube-proxy v1.37's ServiceHealthServer does, with one set of listeners
// per family (kube-proxy runs one per family's proxier): a Service in both
// families is checked on both, each with its own family's count.
type ServiceServer struct {
	proxy *ProxyHealth
	log   *slog.Logger

	mu       sync.RWMutex
	families map[nodetable.Family]*familyChecks
}

// familyChecks are one family's open health checks.
type familyChecks struct {
	where    Listen
	services map[ServiceName]*serviceCheck
}

// serviceCheck is one Service's open health check in one family.
type serviceCheck struct {
	port      uint16
	endpoints int
	servers   []*http.Server
	// listeners are the servers' listeners, closed with them: a server
	// closes only the listeners it has started serving, and the port
	// must be free once the check is closed.
	listeners []net.Listener
}

// NewServiceServer returns a server with no health check open; proxy is
// the health that every answer reports as serviceProxyHealthy. log may be
// nil.
func NewServiceServer(proxy *ProxyHealth, log *slog.Logger) *ServiceServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ServiceServer{proxy: proxy, log: log, families: map[nodetable.Family]*familyChecks{}}
}

// Sync makes family f's open health checks those of checks, listening
// where says, as kube-proxy's SyncServices and SyncEndpoints do after each
// successful sync: a Service gone, or whose port changed, has its
// listeners closed (its port then refuses connections); a new one is
// opened; the others keep their listeners and take their new count. A
// Service whose port cannot be opened (in use, say) is logged and left
// closed, and the next Sync tries again, as in kube-proxy, which also
// records an event. When where changes, every check of the family is
// opened again at the new addresses (kube-proxy resolves its addresses
// once, at start).
func (s *ServiceServer) Sync(f nodetable.Family, where Listen, checks map[ServiceName]ServiceCheck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fc := s.families[f]
	if fc == nil {
		fc = &familyChecks{where: where, services: map[ServiceName]*serviceCheck{}}
		s.families[f] = fc
	}
	if !fc.where.equal(where) {
		for name, sc := range fc.services {
			s.closeCheck(f, name, sc, "the listen addresses changed")
			delete(fc.services, name)
		}
		fc.where = where
	}
	for name, sc := range fc.services {
		if c, ok := checks[name]; !ok || c.Port != sc.port {
			s.closeCheck(f, name, sc, "")
			delete(fc.services, name)
		}
	}
	for _, name := range sortedNames(checks) {
		c := checks[name]
		sc := fc.services[name]
		if sc == nil {
			var err error
			if sc, err = s.open(f, fc.where, name, c.Port); err != nil {
				s.log.Error("Failed to start the Service's health check; retrying at the next sync",
					"service", name.String(), "family", string(f), "port", c.Port, "err", err)
				continue
			}
			fc.services[name] = sc
		}
		sc.endpoints = c.LocalEndpoints
	}
}

func sortedNames(checks map[ServiceName]ServiceCheck) []ServiceName {
	names := make([]ServiceName, 0, len(checks))
	for n := range checks {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b ServiceName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return names
}

// open listens on every address of where for one Service and serves each
// listener. If one address fails, the others are closed again.
func (s *ServiceServer) open(f nodetable.Family, where Listen, name ServiceName, port uint16) (*serviceCheck, error) {
	network, addrs := where.addresses(f, port)
	sc := &serviceCheck{port: port}
	handler := s.handler(f, name)
	for _, addr := range addrs {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), network, addr)
		if err != nil {
			sc.close()
			return nil, err
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		sc.servers, sc.listeners = append(sc.servers, srv), append(sc.listeners, l)
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("Service health check stopped serving", "service", name.String(), "address", addr, "err", err)
			}
		}()
	}
	s.log.Debug("Opened the Service's health check", "service", name.String(), "family", string(f), "addresses", addrs)
	return sc, nil
}

// closeCheck closes one Service's listeners and the connections they accepted.
func (s *ServiceServer) closeCheck(f nodetable.Family, name ServiceName, sc *serviceCheck, why string) {
	sc.close()
	attrs := []any{"service", name.String(), "family", string(f), "port", sc.port}
	if why != "" {
		attrs = append(attrs, "reason", why)
	}
	s.log.Debug("Closed the Service's health check", attrs...)
}

// close closes the servers, the connections they accepted and their
// listeners.
func (sc *serviceCheck) close() {
	for _, srv := range sc.servers {
		srv.Close()
	}
	for _, l := range sc.listeners {
		l.Close()
	}
}

// Close closes every health check, as the command stops.
func (s *ServiceServer) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for f, fc := range s.families {
		for name, sc := range fc.services {
			s.closeCheck(f, name, sc, "stopping")
		}
		delete(s.families, f)
	}
}

// handler answers one Service's health check in family f: 200 when the
// node has a ready endpoint of it and the proxy is healthy, else 503, with
// the count as a weight for load balancers that take one.
func (s *ServiceServer) handler(f nodetable.Family, name ServiceName) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		count, open := s.endpoints(f, name)
		if !open {
			// A request that raced the check's closing: kube-proxy logs
			// it and sends nothing, which is an empty 200.
			s.log.Error("Request for a closed Service health check", "service", name.String(), "family", string(f))
			return
		}
		healthy := s.proxy.Healthy()
		h := w.Header()
		jsonHeaders(h)
		h.Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(count))
		code := http.StatusServiceUnavailable
		if count > 0 && healthy {
			code = http.StatusOK
		}
		w.WriteHeader(code)
		io.WriteString(w, serviceBody(name, count, healthy))
	})
}

func (s *ServiceServer) endpoints(f nodetable.Family, name ServiceName) (int, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if fc := s.families[f]; fc != nil {
		if sc := fc.services[name]; sc != nil {
			return sc.endpoints, true
		}
	}
	return 0, false
}

// serviceBody is kube-proxy's answer, byte for byte: JSON indented with
// tabs, without a final newline.
func serviceBody(name ServiceName, endpoints int, healthy bool) string {
	return fmt.Sprintf("{\n\t\"service\": {\n\t\t\"namespace\": %s,\n\t\t\"name\": %s\n\t},\n\t\"localEndpoints\": %d,\n\t\"serviceProxyHealthy\": %t\n}",
		strconv.Quote(name.Namespace), strconv.Quote(name.Name), endpoints, healthy)
}
