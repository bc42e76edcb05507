#!/usr/bin/env bash
# Runs every parser's fuzz target for a bounded time each (FUZZTIME, 60s
# by default): the snapshot decoder, the iptables-save, nft listing, ipvs
# and userspace text parsers, and the nf_tables netlink rule decoder. A
# crasher is written under the package's testdata/fuzz/ and fails the run;
# commit it, so that it stays a seed that every `go test` replays.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-60s}
targets=(
  "./cluster FuzzDecode"
  "./ruleset/iptables FuzzParseRoundTrip"
  "./ruleset/nftables FuzzParseRoundTrip"
  "./ruleset/ipvs FuzzParseRoundTrip"
  "./ruleset/userspace FuzzParseRoundTrip"
  "./apply/nftables FuzzDecodeRule"
)
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "fuzz: $pkg $name for $fuzztime" >&2
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
done
