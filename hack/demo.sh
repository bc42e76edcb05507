#!/usr/bin/env bash
# The main job on the embedded example, in a throwaway network namespace:
# plan and apply the example cluster's iptables rules to an empty "node",
# change the cluster and apply again, break a rule by hand and repair it,
# then reset. The host's own rules are never touched: every command runs
# inside the namespace, which is deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

hack/install-deps.sh
go build -o bin/kubectl-svcproxy ./cmd/kubectl-svcproxy
bin=$PWD/bin/kubectl-svcproxy

if [ "$(id -u)" -ne 0 ]; then
  echo "### not root: no network namespace, so only rendering the example"
  exec "$bin" render --example --family=ipv4 --cluster-cidr=10.244.0.0/16
fi

ns="svcp-demo-$$"
state=$(mktemp -d)
ip netns add "$ns"
trap 'ip netns del "$ns" 2>/dev/null || true; rm -rf "$state"' EXIT

svcp() {
  ip netns exec "$ns" "$bin" --node-name=node1 --cluster-cidr=10.244.0.0/16 --family=ipv4 "$@"
}
# reset renders nothing, so it takes no node or cluster flags.
svcp_reset() { ip netns exec "$ns" "$bin" reset --family=ipv4 "$@"; }
kernel() { ip netns exec "$ns" "$@"; }
step() { printf '\n### %s\n' "$*"; }
show() { # run a command, print at most $1 lines of its output, and its exit code
  local max=$1; shift
  local code=0
  "$@" > "$state/out" 2>&1 || code=$?
  head -n "$max" "$state/out"
  [ "$(wc -l < "$state/out")" -le "$max" ] || echo "... ($(wc -l < "$state/out") lines in all)"
  tail -n 1 "$state/out" | grep -q '^Plan:' && [ "$(wc -l < "$state/out")" -gt "$max" ] && tail -n 1 "$state/out"
  echo "(exit code $code)"
}
kopts=(--lock-file="$state/lock" --state-dir="$state/cache")

step "1. kubectl svcproxy plan --example   (an empty node: everything is to be added)"
show 12 svcp plan --example

step "2. kubectl svcproxy apply --example"
show 5 svcp apply --example "${kopts[@]}"

step "3. plan again: the node matches the cluster"
show 5 svcp plan --example

step "4. the cluster changes: web loses endpoint 10.244.1.13, Service default/api appears"
sed '/addresses: \[10.244.1.13\]/,+2d' internal/example/snapshot.yaml > "$state/cluster.yaml"
cat >> "$state/cluster.yaml" <<'YAML'
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: default}
spec:
  type: ClusterIP
  clusterIP: 10.96.0.60
  clusterIPs: [10.96.0.60]
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api-1
  namespace: default
  labels: {kubernetes.io/service-name: api}
addressType: IPv4
ports:
- {name: http, port: 8080, protocol: TCP}
endpoints:
- addresses: [10.244.0.61]
  conditions: {ready: true}
  nodeName: node1
YAML
show 40 svcp plan -f "$state/cluster.yaml"
step "   apply --dry-run shows the exact iptables-restore input: only the changed chains"
show 30 svcp apply -f "$state/cluster.yaml" --dry-run "${kopts[@]}"
show 5 svcp apply -f "$state/cluster.yaml" "${kopts[@]}"

step "5. drift: someone deletes the first rule of KUBE-SERVICES by hand"
kernel iptables -t nat -D KUBE-SERVICES 1
show 12 svcp plan -f "$state/cluster.yaml"
show 5 svcp apply -f "$state/cluster.yaml" "${kopts[@]}"
show 5 svcp plan -f "$state/cluster.yaml"

step "6. kubectl svcproxy reset: everything the tool owns goes (kubelet's KUBE-FIREWALL stays)"
show 5 svcp_reset "${kopts[@]}"
echo "chains left in the namespace:"
kernel iptables-save | grep '^:' | grep -v -E '^:(INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) ' || true

step "7. the same cluster in nftables mode, through netlink: apply, an element deleted by hand, repair, reset"
show 3 svcp apply --mode=nftables -f "$state/cluster.yaml" "${kopts[@]}"
kernel nft delete element ip kube-proxy service-ips '{ 10.96.0.10 . tcp . 80 }'
show 16 svcp plan --mode=nftables -f "$state/cluster.yaml"
show 3 svcp apply --mode=nftables -f "$state/cluster.yaml" "${kopts[@]}"
show 3 svcp_reset --mode=nftables "${kopts[@]}"
echo "tables left in the namespace:"
kernel nft list tables
