#!/usr/bin/env bash
# Builds an image of the real kube-proxy with no registry, as hack/image.sh
# builds the tool's: the kube-proxy binary of hack/testcluster/build.sh
# (built from the Go module proxy, cached) on a root filesystem assembled
# from Debian 12 (bookworm) packages, written by test/ociimage as an OCI
# archive for `ctr -n k8s.io images import` or `kind load image-archive`.
# It holds what registry.k8s.io/kube-proxy's base (distroless-iptables)
# holds: iptables with both backends, nft, ipset, conntrack, kmod, and an
# iptables-wrapper (hack/image/iptables-wrapper) behind the plain iptables
# names that picks the node's backend, with the dash shell and the few
# coreutils it needs. It exists for the tests that switch a node between
# kube-proxy and kubectl-svcproxy (test/e2e/kubelet) and for anyone who
# needs a kube-proxy image where no registry is reachable.
#
#   hack/kube-proxy-image.sh [--out DIR]
#
# Writes DIR/kube-proxy.oci.tar (default DIR: _cache/kube-proxy-image),
# tagged registry.k8s.io/kube-proxy:VERSION (the Kubernetes version of
# hack/tools, v1.37.2), for this machine's architecture only (build.sh
# builds kube-proxy for it), and prints the archive's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

out=$repo/_cache/kube-proxy-image
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kube-proxy-image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

bin=$(hack/testcluster/build.sh)
version=${bin##*/}
arch=$(go env GOARCH)

# hack/image.sh's apt cache and lock: the same .debs serve both images.
cache=$repo/_cache/image
shared=${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-svcproxy/image
mkdir -p "$cache" "$shared"
exec 9>"$cache/.lock"
flock -w 900 9

# What distroless-iptables installs: iptables, ipset, kmod, nft (which
# Debian ships in nftables), conntrack; dash as /bin/sh and grep for the
# wrapper; netbase for /etc/protocols and /etc/services.
packages=(iptables ipset conntrack nftables kmod netbase dash grep)
# Single files without their packages' dependencies (each needs only
# libc): what the wrapper runs, and Debian's os-release.
extra_files=(coreutils:bin/ln coreutils:bin/cat coreutils:bin/sleep base-files:usr/lib/os-release)

source "$repo/hack/image/apt.sh"
source "$repo/hack/image/rootfs.sh"

epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
build=$cache/kube-proxy-build/$arch
rm -rf "$build"
mkdir -p "$build"
echo "kube-proxy-image.sh: $arch: fetching packages (at ${SECONDS}s)" >&2
apt_fetch "$arch" "$build/debs.txt" "${packages[@]}"
echo "kube-proxy-image.sh: $arch: assembling the root filesystem (at ${SECONDS}s)" >&2
assemble_rootfs "$arch" "$build/rootfs" "$build/debs.txt" "$bin/kube-proxy" kube-proxy
root=$build/rootfs
ln -sfn dash "$root/bin/sh"
install -m 0755 "$repo/hack/image/iptables-wrapper" "$root/usr/sbin/iptables-wrapper"
for name in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -sfn iptables-wrapper "$root/usr/sbin/$name"
done

echo "kube-proxy-image.sh: writing the archive (at ${SECONDS}s)" >&2
go run ./test/ociimage/mkimage -out "$out/kube-proxy.oci.tar" -ref "registry.k8s.io/kube-proxy:$version" -created "$epoch" \
  -entrypoint /usr/local/bin/kube-proxy \
  -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  -label org.opencontainers.image.title=kube-proxy \
  -label "org.opencontainers.image.version=$version" \
  -rootfs "linux/$arch=$root" >&2
echo "kube-proxy-image.sh: done in ${SECONDS}s" >&2
echo "$out/kube-proxy.oci.tar"
