// Package healthcheck is the proxy's health, as kube-proxy's
// pkg/proxy/healthcheck is kube-proxy's: one model for every command that
// keeps a node's rules.
//
//   - ProxyHealth is the state behind /healthz (and /livez): healthy unless
//     a change has waited too long to reach the kernel. Its Flavor says
//     which kube-proxy release it answers as: V137 for `apply --watch` in
//     the iptables, nftables and ipvs modes, V125 for userspace mode, which
//     follows kube-proxy v1.25, the last release that had it.
//
// The package knows no proxy mode and no command; the commands feed it
// (Queued, Claim, Done around every sync).
package healthcheck
