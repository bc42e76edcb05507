#!/usr/bin/env bash
# Runs every test: unit, golden, and the kernel tests that build throwaway
# network namespaces (they need root and skip with a reason without it;
# under CI=true a missing prerequisite fails instead, see test/testenv).
# Also runs each benchmark once so that they keep compiling and working.
set -euo pipefail
cd "$(dirname "$0")/.."
# phase NAME notes on stderr how far into the run NAME starts: CI must
# stay under 60 minutes on a fresh machine with empty caches.
phase() { echo "test.sh: $1 at $((SECONDS / 60))m$((SECONDS % 60))s" >&2; }

# kube-apiserver, etcd and kube-proxy for the API server and conformance
# tests (test/testcluster, hack/testcluster/build.sh); kube-proxy
# v1.25, the userspace mode's reference (its own module); kubelet,
# kube-controller-manager, kube-scheduler, kubectl and containerd (its own
# module) for the real cluster of the kubelet end-to-end test
# (test/kubeletlab, test/e2e/kubelet), and CoreDNS (its own module) for
# its cluster DNS (test/clusterdns). About 16 minutes of
# compiling from empty caches, then cached: they build in the background
# while the packages install and the tool is checked and built, which
# leave the CPUs idle part of the time (downloads, links).
phase "cluster binaries (background)"
(
  hack/testcluster/build.sh
  hack/testcluster/build.sh kube-proxy-v1.25
  hack/testcluster/build.sh node
  hack/testcluster/build.sh containerd
  hack/testcluster/build.sh coredns
) >/dev/null &
cluster_builds=$!

phase install-deps
hack/install-deps.sh
# The first "ip netns add" on a machine bind-mounts /run/netns onto itself,
# which hides the namespaces other test processes created there before, so
# they can no longer be deleted ("device or resource busy"). Do it once,
# before the tests run in parallel.
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null; then
  ip netns add svcproxy-test-prime && ip netns delete svcproxy-test-prime
fi
phase "format, vet and build"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
# Built as the release and the image build it (static, without symbols):
# the conformance suite and the benchmarks run this binary.
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o bin/kubectl-svcproxy ./cmd/kubectl-svcproxy
# render and snapshot work on macOS and Windows too (krew installs there):
# cross-compile every product package (all but test/, the harness and the
# end-to-end suites, which drive Linux's namespaces, VMs, kubelet and image
# builds; test/archtest keeps that prefix the one list), with goreleaser's flags
# (hack/release-snapshot.sh, which CI does not run, makes the archives).
# One target per system: every target compiles the whole dependency tree
# again (about 5 minutes from empty caches), and no file of the packages
# checked here depends on the architecture, so darwin/amd64 would check
# nothing that darwin/arm64 does not.
phase cross-compile
cross=$(go list -f '{{if .GoFiles}}{{.ImportPath}}{{end}}' ./... |
  grep -v '/test/')
for target in darwin/arm64 windows/amd64; do
  GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go build -trimpath $cross
  GOOS=${target%/*} GOARCH=${target#*/} go vet ./cmd/kubectl-svcproxy
done
phase "waiting for the cluster binaries"
wait "$cluster_builds"
# Every test that runs the binary (test/toolbin: the end-to-end suites, the
# conformance suite, the kubelet lab and the VMs) runs this one.
export SVCPROXY_BINARY="$PWD/bin/kubectl-svcproxy"
phase tests
go test -count=1 -timeout 30m ./...
# Each at its smallest size (test/benchsize): CI checks that every
# benchmark still runs; the figures come from runs at full size.
phase "benchmarks, once each, at their smallest size"
SVCPROXY_BENCH_SIZES=smallest go test -count=1 -run '^$' -bench . -benchtime 1x ./... >/dev/null
# Each parser's fuzz target for a bounded time (hack/fuzz.sh, FUZZTIME,
# 15 s each here: ten targets, each built with coverage first).
phase fuzz
FUZZTIME=${FUZZTIME:-15s} hack/fuzz.sh
phase done
