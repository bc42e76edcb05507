#!/usr/bin/env bash
# Runs Kubernetes' own Service e2e tests (e2e.test of k8s.io/kubernetes
# v1.37.2) on the kubelet lab with one proxy, the column PROXY of
# docs/CONFORMANCE.md:
#
#   hack/e2e-upstream.sh PROXY [--subset] [--record] [--procs N] [--nodes N] [--out DIR]
#
# PROXY is kube-proxy or kube-proxy-nftables (the real kube-proxy v1.37.2
# in iptables or nftables mode, as kubeadm deploys it: the baselines), or
# iptables or nftables (kubectl-svcproxy from deploy/overlays/PROXY). The
# selection is `[sig-network] (Services|Conntrack|KubeProxy)` and
# sig-network's `[Conformance]` tests, minus the skip list
# (test/e2e/upstream/selection.go); --subset runs only a few Service
# tests. A tool column fails when a test that passed with kube-proxy in the
# same mode (its committed results) does not pass.
#
# Builds what it needs first, cached: e2e.test, ginkgo and agnhost
# (hack/testcluster/build.sh e2e, about 8 minutes the first time), the test
# images (hack/e2e-images.sh), the proxy's image. Needs root (the lab's
# namespaces). Writes DIR/PROXY.tsv (the results), DIR/e2e.log (ginkgo's
# output) and DIR/report/ (JUnit); DIR defaults to _cache/e2e-upstream/PROXY.
# --record copies the results to docs/conformance/results/ and regenerates
# docs/CONFORMANCE.md's table. --procs sets ginkgo's parallel processes (3),
# --nodes the lab's nodes (3: about twenty tests skip themselves on one,
# and the health check node port test on fewer than three).
set -euo pipefail
cd "$(dirname "$0")/.."

# usage prints the comment above.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
proxy= subset= record= procs=3 nodes=3 out=
while [ $# -gt 0 ]; do
  case $1 in
    kube-proxy|kube-proxy-nftables|iptables|nftables) proxy=$1; shift ;;
    --subset) subset=1; shift ;;
    --record) record=1; shift ;;
    --procs|--nodes|--out) [ $# -ge 2 ] || { echo "e2e-upstream.sh: $1 needs a value (see --help)" >&2; exit 2; } ;;&
    --procs) procs=$2; shift 2 ;;
    --procs=*) procs=${1#*=}; shift ;;
    --nodes) nodes=$2; shift 2 ;;
    --nodes=*) nodes=${1#*=}; shift ;;
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "e2e-upstream.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$proxy" ]; then
  echo "e2e-upstream.sh: name the proxy: kube-proxy, kube-proxy-nftables, iptables or nftables (see --help)" >&2
  exit 2
fi
if [ -n "$record" ] && [ -n "$subset" ]; then
  echo "e2e-upstream.sh: --record keeps a full run's results; not with --subset" >&2
  exit 2
fi
out=${out:-$PWD/_cache/e2e-upstream/$proxy}
mkdir -p "$out"
out=$(cd "$out" && pwd)

export SVCPROXY_E2E_PROXY=$proxy SVCPROXY_E2E_OUT=$out SVCPROXY_E2E_PROCS=$procs SVCPROXY_E2E_NODES=$nodes
[ -n "$subset" ] && export SVCPROXY_E2E_SUBSET=1
start=$SECONDS
# A run that fails before its end writes no results: never let --record
# take an earlier run's for this one's.
rm -f "$out/$proxy.tsv"
set +e
go test -count=1 -timeout 4h -v -run '^TestUpstreamE2E$' ./test/e2e/upstream 2>&1 | tee "$out/go-test.log"
status=${PIPESTATUS[0]}
set -e
echo "e2e-upstream.sh: $proxy: done in $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s; results in $out/$proxy.tsv" >&2
if [ -n "$record" ] && [ -f "$out/$proxy.tsv" ]; then
  mkdir -p docs/conformance/results
  cp "$out/$proxy.tsv" "docs/conformance/results/$proxy.tsv"
  go test -count=1 -run '^TestConformanceDoc$' ./test/e2e/upstream -update
  echo "e2e-upstream.sh: recorded docs/conformance/results/$proxy.tsv and docs/CONFORMANCE.md" >&2
fi
exit $status
