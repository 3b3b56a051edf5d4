#!/usr/bin/env bash
# Fails if any C++ source differs from clang-format's output (.clang-format at the top).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
files=$(git ls-files '*.cc' '*.h')
[ -n "$files" ] || exit 0
# shellcheck disable=SC2086
if ! clang-format --dry-run --Werror $files 2>/tmp/goref-format.$$; then
  echo "check-format: these files need clang-format -i:" >&2
  grep -oE '^[^:]+\.(cc|h)' /tmp/goref-format.$$ | sort -u >&2
  rm -f /tmp/goref-format.$$
  exit 1
fi
rm -f /tmp/goref-format.$$
