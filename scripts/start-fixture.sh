# Sourced by the scripts that run goref on a bundled Go program (demo.sh, bench-heap.sh): builds
# goref and the fixture with the newest listed Go toolchain, starts it and waits for its READY
# line. Usage: start_fixture NAME [ARGS...]. Sets root, toolchains, go_version, work (a temporary
# directory; the fixture's stdout is $work/out) and svc (its pid); both are cleaned up on exit.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
toolchains=$(scripts/go-toolchains.sh)
scripts/build.sh "$root/build" >/dev/null
go_version=$(grep -vE '^\s*(#|$)' integration/go-versions.txt | tail -n 1)
work=$(mktemp -d)
trap 'kill "${svc:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT

start_fixture() {
  local name=$1
  shift
  (cd "integration/fixtures/$name" &&
    GOTOOLCHAIN=local GOFLAGS= "$toolchains/go$go_version/bin/go" build -o "$work/$name" .)
  "$work/$name" "$@" >"$work/out" 2>&1 &
  svc=$!
  # Building a large heap takes a while; two minutes is far beyond any fixture's start.
  for _ in $(seq 1200); do grep -q READY "$work/out" && return 0; sleep 0.1; done
  echo "$(basename "$0"): $name did not print READY" >&2
  exit 1
}
