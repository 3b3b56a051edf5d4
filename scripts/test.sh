#!/usr/bin/env bash
# Sets up everything a fresh Debian machine needs (packages, Go toolchains 1.21–1.27) and runs
# the whole test suite twice: a normal build, and a build under AddressSanitizer and
# UndefinedBehaviorSanitizer. Also checks formatting. Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/install-deps.sh
scripts/go-toolchains.sh >/dev/null
scripts/check-format.sh

jobs=${GOREF_TEST_JOBS:-2}
echo "== build (RelWithDebInfo)"
scripts/build.sh "$root/build"
echo "== tests (RelWithDebInfo)"
(cd build && ctest --output-on-failure -j"$jobs")

echo "== build (ASan + UBSan)"
scripts/build.sh "$root/build-asan" -DGOREF_SANITIZE=ON
echo "== tests (ASan + UBSan)"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
  LSAN_OPTIONS=suppressions="$root/scripts/lsan.supp":print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j"$jobs")
