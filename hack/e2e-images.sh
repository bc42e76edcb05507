#!/usr/bin/env bash
# Builds, with no registry, every image that Kubernetes' own Service e2e
# tests (e2e.test v1.37.2, issue 35) run, each tagged with exactly the
# reference the suite expects (test/utils/image/manifest.go), for
# `ctr -n k8s.io images import` on the kubelet lab (test/kubeletlab).
# agnhost and regression-issue-74839 are built from the Go module proxy by
# hack/testcluster/build.sh e2e; everything else comes from Debian 12
# (bookworm) packages (hack/image/apt.sh, hack/image/e2e-rootfs.sh), so
# each image is a substitute for upstream's: docs/conformance/IMAGES.md
# lists what differs.
#
#   hack/e2e-images.sh [--out DIR]
#
# Writes DIR/NAME.oci.tar per image (default DIR: _cache/e2e-images), for
# this machine's architecture only, and prints each archive's path on
# stdout, one per line; progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

out=$repo/_cache/e2e-images
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "e2e-images.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

bin=$(hack/testcluster/build.sh e2e)
version=${bin##*/}
arch=$(go env GOARCH)
kube=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')

# hack/image.sh's apt cache and lock: the same .debs serve every image.
cache=$repo/_cache/image
shared=${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-svcproxy/image
mkdir -p "$cache" "$shared"
exec 9>"$cache/.lock"
flock -w 900 9

source "$repo/hack/image/apt.sh"
source "$repo/hack/image/rootfs.sh"
source "$repo/hack/image/e2e-rootfs.sh"
source "$repo/hack/image/e2e-substitutes.sh"

epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
build=$cache/e2e-build/$arch
rm -rf "$build"
mkdir -p "$build/bin"
CGO_ENABLED=0 go build -trimpath -o "$build/bin/mkimage" ./test/ociimage/mkimage
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$build/bin/pause" ./test/ociimage/pause

# What every image is made of besides its packages: these scripts, the
# Go binaries, the creation time. An archive whose inputs (this and its
# package list) are those of its last build is not written again: the
# compression of agnhost's 200 MiB takes most of a minute.
inputs=$(cat hack/e2e-images.sh hack/image/*.sh hack/image/iptables-wrapper \
  "$bin/agnhost" "$bin/regression-issue-74839" "$build/bin/"* \
  "$kube/test/images/agnhost/porter/localhost."* | sha256sum | cut -d' ' -f1)-$epoch

# unchanged NAME [LIST]: whether $out/NAME.oci.tar was built from the
# same inputs (the build functions return if so); if so, prints its path.
# Otherwise records the inputs for write.
unchanged() {
  local name=$1 key
  key=$(cat <(echo "$inputs") ${2:+"$2"} | sha256sum | cut -d' ' -f1)
  if [ -f "$out/$name.oci.tar" ] && [ "$(cat "$out/.$name.inputs" 2>/dev/null)" = "$key" ]; then
    echo "e2e-images.sh: $name: unchanged" >&2
    echo "$out/$name.oci.tar"
    return 0
  fi
  echo "$key" >"$build/$name.inputs"
  return 1
}

# fetch NAME PACKAGES...: PACKAGES with their dependencies, listed in
# $build/NAME.debs.
fetch() {
  local name=$1
  shift
  extra_files=()
  echo "e2e-images.sh: $name: fetching packages (at ${SECONDS}s)" >&2
  apt_fetch "$arch" "$build/$name.debs" "$@"
}

# assemble NAME: $build/NAME from the packages that fetch listed.
assemble() {
  echo "e2e-images.sh: $1: assembling the root filesystem (at ${SECONDS}s)" >&2
  e2e_rootfs "$build/$1" "$build/$1.debs"
}

# bare NAME: $build/NAME with the base files only, for a static binary.
bare() {
  rm -rf "${build:?}/$1"
  mkdir -p "$build/$1/var/lib/dpkg"
  base_files "$build/$1"
}

# write NAME REF MKIMAGE-ARGS...: the archive of $build/NAME, tagged REF,
# labelled a substitute; prints its path.
write() {
  local name=$1 ref=$2
  shift 2
  echo "e2e-images.sh: $name: writing the archive (at ${SECONDS}s)" >&2
  rm -f "$out/.$name.inputs"
  "$build/bin/mkimage" -out "$out/$name.oci.tar" -ref "$ref" -created "$epoch" \
    -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    -label "org.opencontainers.image.title=$name" \
    -label "org.opencontainers.image.ref.name=$ref" \
    -label "org.opencontainers.image.description=substitute for $ref assembled from Debian bookworm packages by kubectl-svcproxy's hack/e2e-images.sh (docs/conformance/IMAGES.md)" \
    -rootfs "linux/$arch=$build/$name" "$@" >&2
  mv "$build/$name.inputs" "$out/.$name.inputs"
  echo "$out/$name.oci.tar"
}

build_agnhost
build_busybox
build_nginx
build_glibc_dns_testing
build_distroless_iptables
build_regression
build_pause
echo "e2e-images.sh: done in ${SECONDS}s" >&2
