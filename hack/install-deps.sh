#!/usr/bin/env bash
# Installs the system packages that the tool and its kernel tests use.
# Safe to run again: it installs only what is missing. Needs root for apt-get;
# without root it only reports what is missing.
set -euo pipefail

# qemu-system-x86 and busybox-static boot the IPVS test VM (hack/vm/README.md);
# ipvsadm goes into that VM, where the drift tests edit IPVS by hand.
# runc and containernetworking-plugins (bridge, host-local, loopback in
# /usr/lib/cni) run the pods of the kubelet end-to-end test (test/kubeletlab).
packages=(iptables nftables ipset conntrack socat iproute2 util-linux time qemu-system-x86 busybox-static ipvsadm runc containernetworking-plugins)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (run as root to install): ${missing[*]}" >&2
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
