// Package healthcheck is the proxy's health, as kube-proxy's
// pkg/proxy/healthcheck is kube-proxy's: one model for every command that
// keeps a node's rules.
//
//   - ProxyHealth is the state behind /healthz (and /livez): healthy unless
//     a change has waited too long to reach the kernel. Its Flavor says
//     which kube-proxy release it answers as: V137 for `apply --watch` in
//     the iptables, nftables and ipvs modes, V125 for userspace mode, which
//     follows kube-proxy v1.25, the last release that had it.
//   - ServiceServer serves the Services' health check node ports: for every
//     Service with externalTrafficPolicy Local and a healthCheckNodePort,
//     an HTTP listener that answers 200 while the node has ready endpoints
//     of the Service and the proxy is healthy, and 503 otherwise, as
//     kube-proxy v1.37's ServiceHealthServer does. Cloud load balancers
//     probe it to send traffic only to nodes with endpoints. Userspace mode
//     has none: v1.25's userspace proxier served no Service health checks.
//
// The package knows no proxy mode and no command; the commands feed it
// (Queued, Claim, Done around every sync; ServiceServer.Sync with the
// node's tables after every successful one).
package healthcheck
