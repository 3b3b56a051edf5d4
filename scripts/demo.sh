#!/usr/bin/env bash
# Sets everything up and runs goref on the bundled example, a small leaking Go service
# (integration/fixtures/leaky): builds goref and the service, starts the service, waits for it to
# be ready, runs goref on it, and stops it again.
set -euo pipefail
source "$(dirname "$0")/start-fixture.sh"
start_fixture leaky
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
