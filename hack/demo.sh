#!/usr/bin/env bash
# The main job on the embedded example: render node1's iptables ruleset from
# the shipped example snapshot, then load it into a throwaway network
# namespace to show that the kernel takes it as rendered. The host's own
# rules are never touched: the namespace exists only for the one command.
set -euo pipefail
cd "$(dirname "$0")/.."

hack/install-deps.sh
go build -o bin/kubectl-svcproxy ./cmd/kubectl-svcproxy
rules=$(mktemp)
trap 'rm -f "$rules"' EXIT

echo "### kubectl svcproxy render --example --mode=iptables --family=ipv4 --cluster-cidr=10.244.0.0/16"
bin/kubectl-svcproxy render --example --mode=iptables --family=ipv4 --cluster-cidr=10.244.0.0/16 | tee "$rules"

if [ "$(id -u)" -ne 0 ]; then
  echo "### (not root: skipping the load into a throwaway network namespace)"
  exit 0
fi
echo "### loading it into a throwaway network namespace with iptables-restore"
unshare --net sh -c 'iptables-restore && iptables-save' < "$rules" > "$rules.saved"
chains=$(grep -c '^:KUBE-' "$rules.saved" || true)
lines=$(grep -c '^-A ' "$rules.saved" || true)
rm -f "$rules.saved"
echo "### the kernel accepted it: $chains kube-proxy chains, $lines rules"
