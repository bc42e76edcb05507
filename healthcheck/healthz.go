package healthcheck

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// The paths of the health server.
const (
	PathHealthz = "/healthz"
	PathLivez   = "/livez"
)

// ToBeDeletedTaint is the taint the cluster autoscaler puts on a node it
// is about to delete: V137's /healthz then fails, so that load balancers
// drain the node first.
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// Serving is what the health server needs besides the state.
type Serving struct {
	// Node returns the node's current object, nil while unknown (which
	// makes V137's /healthz fail). V125 does not ask.
	Node func() *corev1.Node
	// Answered, if set, counts every V137 answer by path and status code
	// (kube-proxy's kubeproxy_proxy_healthz_total and _livez_total).
	Answered func(path string, code int)
}

// Mux returns the health server's handler for the flavour: /healthz and
// /livez for V137, /healthz alone for V125. Other paths are 404.
func (h *ProxyHealth) Mux(s Serving) *http.ServeMux {
	mux := http.NewServeMux()
	if h.flavor == V125 {
		mux.HandleFunc(PathHealthz, h.serveV125)
		return mux
	}
	mux.Handle(PathHealthz, h.handlerV137(PathHealthz, s))
	mux.Handle(PathLivez, h.handlerV137(PathLivez, s))
	return mux
}

// bodyV137 is kube-proxy v1.37's ProxyHealth, in its field order.
type bodyV137 struct {
	LastUpdated  time.Time                             `json:"lastUpdated"`
	CurrentTime  time.Time                             `json:"currentTime"`
	NodeEligible *bool                                 `json:"nodeEligible,omitempty"`
	Healthy      bool                                  `json:"healthy"`
	Status       map[nodetable.Family]familyStatusV137 `json:"status,omitempty"`
}

// familyStatusV137 is one family's proxier in kube-proxy v1.37's body.
type familyStatusV137 struct {
	LastUpdated time.Time `json:"lastUpdated"`
	Healthy     bool      `json:"healthy"`
}

// handlerV137 serves path as kube-proxy v1.37 does. A healthy answer says
// lastUpdated is now, as kube-proxy does for its old clients; the status
// of each family keeps the time of the last successful sync.
func (h *ProxyHealth) handlerV137(path string, s Serving) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		st := h.state()
		body := bodyV137{LastUpdated: st.lastUpdated, CurrentTime: st.now, Healthy: st.healthy}
		if len(h.families) > 0 {
			body.Status = make(map[nodetable.Family]familyStatusV137, len(h.families))
			for _, f := range h.families {
				body.Status[f] = familyStatusV137{LastUpdated: st.lastUpdated, Healthy: st.healthy}
			}
		}
		ok := st.healthy
		if path == PathHealthz {
			eligible := nodeEligible(s.Node)
			body.NodeEligible = &eligible
			ok = ok && eligible
		}
		code := http.StatusServiceUnavailable
		if ok {
			code = http.StatusOK
			body.LastUpdated = st.now
		}
		if s.Answered != nil {
			s.Answered(path, code)
		}
		data, _ := json.Marshal(body)
		jsonHeaders(w.Header())
		w.WriteHeader(code)
		w.Write(data)
	})
}

// nodeEligible is false while the node is unknown, being deleted or
// tainted for deletion by the autoscaler.
func nodeEligible(get func() *corev1.Node) bool {
	var node *corev1.Node
	if get != nil {
		node = get()
	}
	if node == nil || node.DeletionTimestamp != nil {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == ToBeDeletedTaint {
			return false
		}
	}
	return true
}

// serveV125 serves /healthz as kube-proxy v1.25 did: no node check, no
// count, and both times in time.Time's String form, quoted, in a body
// that is JSON only by its look. As in v1.37, a healthy answer says
// lastUpdated is now.
func (h *ProxyHealth) serveV125(w http.ResponseWriter, _ *http.Request) {
	st := h.state()
	code := http.StatusServiceUnavailable
	if st.healthy {
		code = http.StatusOK
		st.lastUpdated = st.now
	}
	jsonHeaders(w.Header())
	w.WriteHeader(code)
	fmt.Fprintf(w, "{\"lastUpdated\": %s,\"currentTime\": %s}",
		strconv.Quote(st.lastUpdated.String()), strconv.Quote(st.now.String()))
}

// jsonHeaders are the headers of every kube-proxy health answer.
func jsonHeaders(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
}

// ServerName is the Server header of the tool's health and metrics
// answers. kube-proxy sends none, and its answers are otherwise the same:
// the header is how `plan` and `apply` tell the tool's own apply --watch
// from a live kube-proxy on the same ports (apply/otherproxy).
const ServerName = "kubectl-svcproxy"

// Identify makes h's answers carry the Server header ServerName.
func Identify(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", ServerName)
		h.ServeHTTP(w, r)
	})
}
