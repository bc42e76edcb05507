// Package otherproxy tells whether another proxy runs on the node: a live
// kube-proxy, which writes the same rules as the tool and would undo its
// changes (and the tool its), or the tool's own apply --watch.
//
// The rules cannot tell: the tool writes exactly what kube-proxy writes,
// so a node that kube-proxy manages and one the tool applied look alike.
// Two signals can, and both are cheap to read:
//
//   - a process named kube-proxy in this network namespace (its
//     /proc/PID/comm, and /proc/PID/ns/net equal to ours); it needs the
//     host's PID namespace, which a container without hostPID lacks;
//   - what answers on kube-proxy's health and metrics ports: kube-proxy's
//     /healthz JSON (lastUpdated, currentTime) or its kubeproxy_ metrics,
//     without the Server header that the tool's own servers send
//     (healthcheck.ServerName). It needs the ports where the caller
//     looks, which a kube-proxy bound elsewhere does not use.
//
// Either one is enough (Decide): a process seen with silent ports is a
// kube-proxy starting or bound elsewhere, and answers without a process
// are a kube-proxy in another PID namespace. Something else answering on
// the ports is no signal at all. Each probe is bounded by a short timeout;
// on a node where nothing listens, a refused connection to loopback costs
// microseconds.
package otherproxy
