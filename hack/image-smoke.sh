#!/usr/bin/env bash
# Loads the image that hack/image.sh wrote into a throwaway podman and,
# if given a containerd directory, a throwaway containerd, and runs it
# there, each container in its own empty network namespace. By hand only
# (root; podman and runc from Debian); docs/IMAGE.md has what it showed.
#
#   hack/image-smoke.sh [ARCHIVE] [CONTAINERD_DIR]
#
# ARCHIVE defaults to _cache/image/kubectl-svcproxy.oci.tar. CONTAINERD_DIR
# holds containerd, containerd-shim-runc-v2 and ctr (e.g. the ones
# hack/testcluster builds); without it only podman runs.
#
# Everything lives in a temporary directory, in a private mount namespace
# where /var/lib and /run are empty tmpfs: podman's blob cache and
# containerd's defaults never reach the machine's. This machine's quirks:
# crun refuses cgroup v1 hybrid mode, so runc with cgroupfs; the sandbox
# has no CAP_SYS_RESOURCE, so rlimits are set to what it already allows.
set -euo pipefail
cd "$(dirname "$0")/.."
archive=$(realpath "${1:-_cache/image/kubectl-svcproxy.oci.tar}")
ctrdir=${2:+$(realpath "$2")}
ref=registry.local/kubectl-svcproxy:dev
tmp=$(mktemp -d /tmp/image-smoke.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tmp"

cat >"$tmp/inner.sh" <<EOF
set -eu
mount -t tmpfs tmpfs /var/lib
mount -t tmpfs tmpfs /run
p="podman --root $tmp/root --runroot $tmp/runroot --tmpdir $tmp/tmp --storage-driver vfs --cgroup-manager cgroupfs --runtime runc --events-backend none"
run="\$p run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024"
echo "== podman load"; \$p load -i "$archive"
echo "== podman images"; \$p images
echo "== version"; \$run $ref version
for cmd in iptables-legacy-save iptables-nft-save ip6tables-nft-save; do
  echo "== \$cmd (privileged)"; \$run --privileged --entrypoint \$cmd $ref
done
echo "== plan --example --mode=iptables (privileged; exit 1: changes to make)"
\$run --privileged $ref plan --example --mode=iptables >"$tmp/plan.txt" || echo "exit \$?"
head -5 "$tmp/plan.txt"
if [ -n "$ctrdir" ]; then
  export PATH="$ctrdir:\$PATH"
  printf '%s\n' 'version = 3' 'root = "$tmp/ctd/root"' 'state = "$tmp/ctd/state"' \
    'disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images"]' \
    '[grpc]' '  address = "$tmp/ctd.sock"' >"$tmp/ctd.toml"
  containerd -c "$tmp/ctd.toml" >"$tmp/ctd.log" 2>&1 &
  pid=\$!
  for i in \$(seq 30); do [ -S "$tmp/ctd.sock" ] && break; sleep 1; done
  c="ctr -a $tmp/ctd.sock -n k8s.io"
  echo "== ctr images import"; \$c images import --all-platforms "$archive" 2>/dev/null
  \$c images ls 2>/dev/null
  echo "== ctr run version"; \$c run --rm $ref smoke kubectl-svcproxy version 2>/dev/null
  kill \$pid; wait \$pid || true
fi
EOF
unshare --mount --propagation private sh "$tmp/inner.sh"
