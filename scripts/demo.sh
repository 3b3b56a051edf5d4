#!/usr/bin/env bash
# Sets everything up and runs goref on the bundled example, a small leaking Go service
# (integration/fixtures/leaky): builds goref and the service, starts the service, waits for it to
# be ready, runs goref on it, and stops it again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
toolchains=$(scripts/go-toolchains.sh)
scripts/build.sh "$root/build" >/dev/null
go_version=$(grep -vE '^\s*(#|$)' integration/go-versions.txt | tail -n 1)
work=$(mktemp -d)
trap 'kill "${svc:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
(cd integration/fixtures/leaky &&
  GOTOOLCHAIN=local GOFLAGS= "$toolchains/go$go_version/bin/go" build -o "$work/leaky" .)
"$work/leaky" >"$work/out" 2>&1 &
svc=$!
for _ in $(seq 600); do grep -q READY "$work/out" && break; sleep 0.1; done
grep -q READY "$work/out" || { echo "demo: the example service did not start" >&2; exit 1; }
echo "example service: pid $svc ($(grep -E 'cache.entries|registry.sessions' "$work/out" | tr '\n' ' '))"
echo "\$ goref info $svc"
build/goref info "$svc"
echo
echo "\$ goref stacks -v $svc   (first 30 lines)"
build/goref stacks -v "$svc" >"$work/stacks.txt"
head -n 30 "$work/stacks.txt"
echo
echo "\$ goref attach -v -o $work/heap.pb.gz $svc"
build/goref attach -v -o "$work/heap.pb.gz" "$svc"
