#!/usr/bin/env bash
# Helpers for the kernel tests built on test/netlab. They need root.
#
#   hack/netlab.sh test [go test flags] [./packages...]
#       run kernel tests (default flags -v -count=1, default package
#       ./test/netlab/)
#   hack/netlab.sh list
#       list lab namespaces (svcp-<pid>-<random>-<role>) and whether the
#       test process that made them still runs
#   hack/netlab.sh clean
#       delete lab namespaces whose test process is gone (killed tests skip
#       their cleanup); namespaces of running tests are left alone
set -euo pipefail

cd "$(dirname "$0")/.."

lab_namespaces() {
	ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^svcp-[0-9]+-[0-9a-f]{8}-' || true
}

# owner_alive says whether the process named in a namespace still runs
# (a zombie does not).
owner_alive() {
	local pid=${1#svcp-} stat
	pid=${pid%%-*}
	stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat:0:1} != Z ]]
}

need_root() {
	if [[ $(id -u) -ne 0 ]]; then
		echo "netlab.sh: $1 needs root" >&2
		exit 1
	fi
}

case "${1:-}" in
test)
	shift
	need_root test
	pkgs=()
	for arg in "$@"; do
		if [[ $arg == ./* ]]; then pkgs=(); break; fi
		pkgs=(./test/netlab/)
	done
	if [[ $# -eq 0 ]]; then
		set -- -v -count=1
		pkgs=(./test/netlab/)
	fi
	exec go test "$@" "${pkgs[@]}"
	;;
list)
	for ns in $(lab_namespaces); do
		if owner_alive "$ns"; then echo "$ns running"; else echo "$ns stale"; fi
	done
	;;
clean)
	need_root clean
	for ns in $(lab_namespaces); do
		if ! owner_alive "$ns"; then
			ip netns delete "$ns" && echo "deleted $ns"
		fi
	done
	;;
*)
	sed -n '2,14s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
