#!/usr/bin/env bash
# Prints deploy/'s manifests for one cluster, ready for `kubectl apply -f -`:
# rbac.yaml, config.yaml and daemonset.yaml (or cronjob.yaml with --cronjob
# NODE), with the strings they tell you to replace replaced.
#
#   hack/manifests.sh --server https://10.0.0.10:6443 --image IMAGE \
#       [--mode iptables|nftables|ipvs] [--cluster-cidr 10.244.0.0/16] \
#       [--cronjob NODE] | kubectl apply -f -
#
# --server is the API server as the node reaches it without service rules
# (kubeadm's controlPlaneEndpoint); see deploy/config.yaml.
set -euo pipefail
deploy="$(cd "$(dirname "$0")/../deploy" && pwd)"
server= image= mode=iptables cidr=10.244.0.0/16 cron_node=
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --server) server=$2 ;;
    --image) image=$2 ;;
    --mode) mode=$2 ;;
    --cluster-cidr) cidr=$2 ;;
    --cronjob) cron_node=$2 ;;
    *) usage ;;
  esac
  shift 2 || usage
done
[ -n "$server" ] && [ -n "$image" ] || usage
case $server in https://*) ;; *) echo "--server $server: want https://HOST:PORT" >&2; exit 2 ;; esac
case $mode in iptables|nftables|ipvs) ;; *) echo "--mode $mode: want iptables, nftables or ipvs" >&2; exit 2 ;; esac
# '#' delimits the sed expressions: refuse it in the values.
for v in "$server" "$image" "$cidr" "$cron_node"; do
  case $v in *'#'*|*$'\n'*) echo "bad value: $v" >&2; exit 2 ;; esac
done

cat "$deploy/rbac.yaml"
echo ---
sed -e "s#https://control-plane.example.invalid:6443#$server#" \
    -e "s#^    mode: iptables\$#    mode: $mode#" \
    -e "s#^    clusterCIDR: 10.244.0.0/16\$#    clusterCIDR: $cidr#" \
    "$deploy/config.yaml"
echo ---
if [ -n "$cron_node" ]; then
  sed -e "s#ghcr.io/kubectl-svcproxy/kubectl-svcproxy:latest#$image#" \
      -e "s#node-name-placeholder#$cron_node#g" "$deploy/cronjob.yaml"
else
  sed -e "s#ghcr.io/kubectl-svcproxy/kubectl-svcproxy:latest#$image#" "$deploy/daemonset.yaml"
fi
