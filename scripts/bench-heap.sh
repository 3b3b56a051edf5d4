#!/usr/bin/env bash
# The heap-analysis benchmark of docs/PERFORMANCE.md: builds the bigheap fixture (about MIB MiB of
# live heap in millions of small objects), starts it, and runs `goref attach -v` REPS times,
# printing the pause, the total time and goref's peak RSS; then, if GRF names a grf binary
# (cloudwego/goref), runs `grf attach` once on the same process for comparison.
# Usage: scripts/bench-heap.sh [MIB=1024] [REPS=3]
set -euo pipefail
mib=${1:-1024}
reps=${2:-3}
source "$(dirname "$0")/start-fixture.sh"
start_fixture bigheap -mb "$mib"
echo "bigheap: go$go_version, $(grep -E 'heap.live|heap.objects' "$work/out" | tr '\n' ' ')"
for i in $(seq "$reps"); do
  /usr/bin/time -f "goref: peak RSS %M KiB, wall %e s" build/goref attach -v -o "$work/heap.pb.gz" \
    "$svc" 2>&1 >/dev/null | grep -E "stopped|analysed|peak RSS"
done
if [ -n "${GRF:-}" ]; then
  /usr/bin/time -f "grf: peak RSS %M KiB, wall %e s (the target is stopped throughout)" \
    "$GRF" attach "$svc" -o "$work/grf.out" 2>&1 | grep -E "peak RSS"
  for f in "$work/heap.pb.gz" "$work/grf.out"; do
    "$toolchains/go$go_version/bin/go" tool pprof -top -sample_index=inuse_space "$f" 2>/dev/null |
      grep -E "^Showing" | sed "s|^|$(basename "$f"): |"
  done
fi
