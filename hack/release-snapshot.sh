#!/usr/bin/env bash
# Builds goreleaser (the version pinned below, from the Go module proxy)
# once into _cache/tools/goreleaser-<version>/ (git-ignored), with a shared
# copy under ~/.cache/kubectl-svcproxy/tools/ for other checkouts on the
# machine, as hack/testcluster/build.sh does for the test cluster. Then it
# checks .goreleaser.yaml and builds a snapshot release into dist/: every
# platform's archive and checksums.txt, nothing published.
#
#   hack/release-snapshot.sh          build goreleaser if needed, check, snapshot
#   hack/release-snapshot.sh build    only build goreleaser; print its path
#
# After the snapshot it runs test/release's TestSnapshotRelease, which
# makes another into a temporary directory (from the build cache) and
# checks every archive against deploy/krew/svcproxy.yaml. CI does not run
# this script: from empty caches, goreleaser and five targets cost more
# than CI's budget (hack/test.sh cross-compiles the three extra platforms
# instead). Building goreleaser takes minutes the first time; timings go to
# stderr.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# v2.17 and later need a newer Go than the project's.
version=v2.15.1
out="${TOOLS_CACHE:-$root/_cache/tools}/goreleaser-$version"
shared="${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-svcproxy/tools/goreleaser-$version"
mkdir -p "$out"

# Test packages and checkouts may ask at once: one build at a time.
exec 9>"$out/.lock"
flock 9
start=$SECONDS
if [ -x "$out/goreleaser" ]; then
  echo "release: goreleaser $version: cached in $out" >&2
elif [ -x "$shared/goreleaser" ] && cp "$shared/goreleaser" "$out/goreleaser.tmp.$$"; then
  mv -f "$out/goreleaser.tmp.$$" "$out/goreleaser"
  echo "release: goreleaser $version: copied from $shared" >&2
else
  # go install into a temporary directory, then rename: an interrupted
  # build never leaves a half-written binary behind.
  tmp=$(mktemp -d "$out/build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && GOBIN="$tmp" GOFLAGS=-trimpath CGO_ENABLED=0 \
    go install -ldflags='-s -w' "github.com/goreleaser/goreleaser/v2@$version")
  mv -f "$tmp/goreleaser" "$out/goreleaser"
  echo "release: built goreleaser $version in $((SECONDS - start))s" >&2
fi
if [ ! -x "$shared/goreleaser" ]; then
  mkdir -p "$shared" && cp "$out/goreleaser" "$shared/goreleaser.tmp.$$" &&
    mv -f "$shared/goreleaser.tmp.$$" "$shared/goreleaser" || true
fi
exec 9>&-

if [ "${1:-}" = build ]; then
  echo "$out/goreleaser"
  exit 0
fi
cd "$root"
"$out/goreleaser" check
start=$SECONDS
"$out/goreleaser" release --snapshot --clean --skip=publish
echo "release: snapshot in dist/ in $((SECONDS - start))s" >&2
SVCPROXY_RELEASE_SNAPSHOT=1 go test -count=1 -run '^TestSnapshotRelease$' ./test/release
