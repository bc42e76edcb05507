#!/usr/bin/env bash
# Builds the test cluster's binaries, kube-apiserver, etcd and kube-proxy
# (the conformance reference, test/conformance), from the
# hack/tools module (k8s.io/kubernetes and go.etcd.io/etcd/server/v3 from the
# Go module proxy) into _cache/testcluster/<kubernetes version>/ (git-ignored).
# A binary that is already there, or in the machine's shared cache, is not
# rebuilt. Prints the directory on stdout, and
# timings on stderr.
#
# The first build takes minutes; test/testcluster runs this script when
# the binaries are missing, and hack/test.sh runs it before the tests.
#
# `build.sh kube-proxy-v1.25` builds only kube-proxy v1.25 instead, the
# userspace mode's reference (the last release with that mode), from its own
# module hack/tools/kubeproxy125 so that its old dependencies stay apart,
# into _cache/testcluster/v1.25.<patch>/.
#
# `build.sh node` builds the rest of a real cluster for the kubelet end-to-end
# test (test/kubeletlab): kubelet, kube-controller-manager,
# kube-scheduler and kubectl, from the same hack/tools module and version.
# `build.sh containerd` builds containerd v2, its runc shim and ctr from
# their own module hack/tools/containerd (so that containerd's dependencies
# do not move Kubernetes') into _cache/testcluster/containerd-<version>/.
# `build.sh e2e` builds Kubernetes' own end-to-end suite for
# hack/e2e-upstream.sh: e2e.test (`go test -c` of k8s.io/kubernetes/test/e2e,
# about 8 minutes on 2 cores), the ginkgo runner, and agnhost and
# regression-issue-74839 for the test images, from hack/tools/e2e (the
# suite's test-only dependencies stay apart) into the same directory as
# the cluster's binaries.
# `build.sh coredns` builds CoreDNS, the cluster DNS of test/clusterdns, at
# the version kubeadm v1.37 deploys, from its own module hack/tools/coredns
# into _cache/testcluster/coredns-<version>/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tools="$root/hack/tools"
set_=${1:-testcluster}
case $set_ in
  testcluster|node) ;;
  e2e) tools="$root/hack/tools/e2e" ;;
  kube-proxy-v1.25) tools="$root/hack/tools/kubeproxy125" ;;
  containerd) tools="$root/hack/tools/containerd" ;;
  coredns) tools="$root/hack/tools/coredns" ;;
  *) echo "usage: $0 [node|e2e|kube-proxy-v1.25|containerd|coredns]" >&2; exit 2 ;;
esac

ldflags='-s -w'
if [ "$set_" = containerd ]; then
  version=$(cd "$tools" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
  ldflags="$ldflags -X github.com/containerd/containerd/v2/version.Version=$version"
  version=containerd-$version
elif [ "$set_" = coredns ]; then
  version=coredns-$(cd "$tools" && go list -m -f '{{.Version}}' github.com/coredns/coredns)
else
  version=$(cd "$tools" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
fi
out="${TESTCLUSTER_CACHE:-$root/_cache/testcluster}/$version"
mkdir -p "$out"

# Test packages run in parallel and may all ask for a build: one at a time.
exec 9>"$out/.lock"
flock 9

# CI and fresh clones on the same machine share a second cache outside the
# checkout, so a new clone does not rebuild for minutes what the machine has.
shared="${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-svcproxy/testcluster/$version"

# build NAME PACKAGE: go build PACKAGE into $out/NAME unless it exists.
# The binary is written under a temporary name and renamed, so an
# interrupted build never leaves a half-written binary behind.
build() {
  local name=$1 pkg=$2
  if [ -x "$out/$name" ]; then
    echo "testcluster: $name $version: cached in $out" >&2
    share "$name"
    return
  fi
  if [ -x "$shared/$name" ] && cp "$shared/$name" "$out/$name.tmp.$$"; then
    mv -f "$out/$name.tmp.$$" "$out/$name"
    echo "testcluster: $name $version: copied from $shared" >&2
    return
  fi
  local start=$SECONDS verb=build
  # A suite is a test binary: `go test -c` builds its _test.go files too.
  [ "$name" = e2e.test ] && verb="test -c"
  (cd "$tools" && GOFLAGS=-trimpath CGO_ENABLED=0 \
    go $verb -tags "no_btrfs no_devmapper no_zfs" -ldflags="$ldflags" -o "$out/$name.tmp.$$" "$pkg")
  mv -f "$out/$name.tmp.$$" "$out/$name"
  echo "testcluster: built $name ($pkg) in $((SECONDS - start))s" >&2
  share "$name"
}

# share NAME: keep a copy in the shared cache (best effort).
share() {
  [ -x "$shared/$1" ] && return
  mkdir -p "$shared" && cp "$out/$1" "$shared/$1.tmp.$$" && mv -f "$shared/$1.tmp.$$" "$shared/$1" || true
}

total=$SECONDS
if [ "$set_" = containerd ]; then
  build containerd github.com/containerd/containerd/v2/cmd/containerd
  build containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
  build ctr github.com/containerd/containerd/v2/cmd/ctr
  echo "testcluster: binaries ready in $((SECONDS - total))s" >&2
  echo "$out"
  exit 0
fi
if [ "$set_" = coredns ]; then
  build coredns github.com/coredns/coredns
  echo "testcluster: binaries ready in $((SECONDS - total))s" >&2
  echo "$out"
  exit 0
fi
if [ "$set_" = testcluster ]; then
  build etcd go.etcd.io/etcd/server/v3
  build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
fi
if [ "$set_" = e2e ]; then
  build e2e.test k8s.io/kubernetes/test/e2e
  build ginkgo github.com/onsi/ginkgo/v2/ginkgo
  build agnhost k8s.io/kubernetes/test/images/agnhost
  build regression-issue-74839 k8s.io/kubernetes/test/images/regression-issue-74839
  echo "testcluster: binaries ready in $((SECONDS - total))s" >&2
  echo "$out"
  exit 0
fi
if [ "$set_" = node ]; then
  build kubelet k8s.io/kubernetes/cmd/kubelet
  build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
  build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
  build kubectl k8s.io/kubernetes/cmd/kubectl
  echo "testcluster: binaries ready in $((SECONDS - total))s" >&2
  echo "$out"
  exit 0
fi
build kube-proxy k8s.io/kubernetes/cmd/kube-proxy
echo "testcluster: binaries ready in $((SECONDS - total))s" >&2
echo "$out"
