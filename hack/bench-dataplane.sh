#!/usr/bin/env bash
# Benchmarks the data plane of every proxy mode once and draws
# docs/PERFORMANCE.md's section "The data plane, mode by mode" from that
# one run (test/dataplane, BenchmarkDataplane):
#
#   1. on this host: iptables (iptables-nft), nftables and the compact
#      nftables layout, at DATAPLANE_SIZES (default 100,1000,10000);
#   2. in the qemu VM (TestDataplaneInVM; one vCPU under TCG, so only
#      relative figures): ipvs, which this host's kernel lacks, and the
#      other modes beside it, at DATAPLANE_VM_SIZES (default 100,1000,10000) and
#      DATAPLANE_VM_MODES (default all four);
#   3. test/dataplane/plot turns the two outputs into the SVGs under
#      docs/perf/ and the tables between the markers of docs/PERFORMANCE.md.
#
# The raw output stays under _cache/bench-dataplane/ (git-ignored), with
# the load average sampled every 10 s during the run. Needs root (network
# namespaces), iptables-nft and qemu-system-x86_64 (hack/install-deps.sh).
# SKIP_VM=1 leaves the VM out: the document then has no ipvs figures.
# DATAPLANE_MACHINE names the host in the document (default: its core
# count and architecture).
set -euo pipefail
cd "$(dirname "$0")/.."

out=_cache/bench-dataplane
mkdir -p "$out"
sizes=${DATAPLANE_SIZES:-100,1000,10000}
vm_sizes=${DATAPLANE_VM_SIZES:-100,1000,10000}
vm_modes=${DATAPLANE_VM_MODES:-iptables,nftables,nftables-compact,ipvs}
start=$(date +%s)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

# The load average every 10 s, to say how loaded the shared machine was.
(while sleep 10; do cut -d' ' -f1-3 /proc/loadavg; done) >"$out/loadavg.txt" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT

echo "bench-dataplane: host modes at $sizes" >&2
DATAPLANE_SIZES=$sizes DATAPLANE_MODES=iptables,nftables,nftables-compact \
  go test -count=1 -timeout 120m -run '^$' -bench '^BenchmarkDataplane$' -benchtime 1x \
  ./test/dataplane | tee "$out/host.txt"

inputs=(-in "host=$out/host.txt")
if [ -z "${SKIP_VM:-}" ]; then
  echo "bench-dataplane: VM, $vm_modes at $vm_sizes" >&2
  DATAPLANE_VM=1 DATAPLANE_VM_SIZES=$vm_sizes DATAPLANE_VM_MODES=$vm_modes \
    go test -count=1 -timeout 180m -run '^TestDataplaneInVM$' -v ./test/dataplane | tee "$out/vm.txt"
  inputs+=(-in "vm=$out/vm.txt")
fi
kill "$sampler" 2>/dev/null || true

wall=$(( $(date +%s) - start ))
load=$(awk '{ for (i = 1; i <= 3; i++) { s[i] += $i; if ($i > m[i]) m[i] = $i } n++ }
  END { if (n) printf "mean %.2f / %.2f / %.2f, highest 1-min %.2f", s[1]/n, s[2]/n, s[3]/n, m[1]; else print "not sampled" }' "$out/loadavg.txt")
cpus=$(nproc)
vm_kernel=$(grep -ho 'dataplane: kernel [^,]*' "$out/vm.txt" 2>/dev/null | head -1 | cut -d' ' -f3)
about="Measured by \`hack/bench-dataplane.sh\` on $started in one run of $((wall / 60)) min $((wall % 60)) s: \
host ${DATAPLANE_MACHINE:-$cpus-core $(uname -m) machine} ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), \
kernel $(uname -r), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); \
load average during the run (1/5/15 min, every 10 s): $load; the machine was shared with other work. \
VM: qemu TCG, one vCPU, 4 GiB, kernel ${vm_kernel:-unknown} (test/vmtest). \
Host sizes $sizes; VM sizes $vm_sizes. 10 endpoints per Service."
go run ./test/dataplane/plot "${inputs[@]}" -svg docs/perf -doc docs/PERFORMANCE.md -about "$about"
echo "bench-dataplane: done in ${wall}s; raw output in $out, charts in docs/perf" >&2
