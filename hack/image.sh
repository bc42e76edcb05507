#!/usr/bin/env bash
# Builds the kubectl-svcproxy OCI image with no registry: the root
# filesystem is assembled from Debian 12 (bookworm) packages, the static
# binary is added, and test/ociimage writes one multi-platform OCI
# archive that `podman load` and `ctr -n k8s.io images import` read.
# docs/IMAGE.md explains the contents.
#
#   hack/image.sh [--arch amd64,arm64] [--out DIR] [--ref NAME]
#
# Writes DIR/kubectl-svcproxy.oci.tar (default DIR: _cache/image) and
# prints its path and each platform's compressed and uncompressed size.
# Downloaded .debs are kept in _cache/image/apt/ARCH and shared through
# ~/.cache/kubectl-svcproxy/image/debs/ARCH. apt runs with a private
# configuration and state under _cache/image/apt: the machine's apt
# configuration, package lists and dpkg architectures are never changed.
# The same commit and the same packages give the same image digest
# (SOURCE_DATE_EPOCH, default the commit's time, stamps every file).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

arches=amd64,arm64
out=$repo/_cache/image
ref=registry.local/kubectl-svcproxy:dev
while [ $# -gt 0 ]; do
  case $1 in
    --arch) arches=$2; shift 2 ;;
    --arch=*) arches=${1#*=}; shift ;;
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --ref) ref=$2; shift 2 ;;
    --ref=*) ref=${1#*=}; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

cache=$repo/_cache/image
shared=${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-svcproxy/image
mkdir -p "$cache" "$shared"
# One build at a time per checkout: apt's private state and the rootfs
# directories are shared by every run.
exec 9>"$cache/.lock"
flock -w 900 9

# The packages the image needs; apt adds their dependencies (libc6,
# libxtables12, libnftnl11, libmnl0, libnetfilter-conntrack3, ...).
#   iptables: both backends' save/restore, for iptables, ipvs and userspace
#             modes (the tool calls iptables-{legacy,nft}-{save,restore}
#             and ip6tables-*, never the plain names);
#   ipset, conntrack: kube-proxy's image has them; for operators (the tool
#             itself speaks netlink for both);
#   netbase: /etc/protocols and /etc/services, which iptables uses to
#             name protocols and ports.
# Not nftables: nftables mode speaks netlink, the tool never runs `nft`.
packages=(iptables ipset conntrack netbase)
# Single files, without their packages' dependencies: `cat`, with which
# the tool reads /proc/net/ip_tables_names (apply/iptables DetectBackend),
# and Debian's os-release.
extra_files=(coreutils:bin/cat base-files:usr/lib/os-release)

source "$repo/hack/image/apt.sh"
source "$repo/hack/image/rootfs.sh"

epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
commit=$(git rev-parse HEAD 2>/dev/null || echo none)
date=$(TZ=UTC date -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
pkg=github.com/kubectl-svcproxy/kubectl-svcproxy

rootfs_args=()
IFS=, read -r -a arch_list <<<"$arches"
for arch in "${arch_list[@]}"; do
  case $arch in amd64|arm64) ;; *) echo "image.sh: unsupported arch $arch (amd64, arm64)" >&2; exit 2 ;; esac
  build=$cache/build/$arch
  rm -rf "$build"
  mkdir -p "$build"
  echo "image.sh: $arch: building kubectl-svcproxy $version" >&2
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -o "$build/kubectl-svcproxy" \
    -ldflags "-s -w -X $pkg/internal/cli.version=$version -X $pkg/internal/cli.commit=$commit -X $pkg/internal/cli.date=$date" \
    ./cmd/kubectl-svcproxy
  echo "image.sh: $arch: fetching packages (at ${SECONDS}s)" >&2
  apt_fetch "$arch" "$build/debs.txt" "${packages[@]}"
  echo "image.sh: $arch: assembling the root filesystem (at ${SECONDS}s)" >&2
  assemble_rootfs "$arch" "$build/rootfs" "$build/debs.txt" "$build/kubectl-svcproxy"
  rootfs_args+=(-rootfs "linux/$arch=$build/rootfs")
done

echo "image.sh: writing the archive (at ${SECONDS}s)" >&2
go run ./test/ociimage/mkimage -out "$out/kubectl-svcproxy.oci.tar" -ref "$ref" -created "$epoch" \
  -entrypoint /usr/local/bin/kubectl-svcproxy \
  -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  -label org.opencontainers.image.title=kubectl-svcproxy \
  -label "org.opencontainers.image.version=$version" \
  -label "org.opencontainers.image.revision=$commit" \
  -label "org.opencontainers.image.created=$date" \
  "${rootfs_args[@]}"
echo "image.sh: done in ${SECONDS}s" >&2
