#!/usr/bin/env bash
# Installs the Debian packages goref builds and tests with. Idempotent: installs only what is missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      libdw-dev libelf-dev elfutils libzydis-dev libprotobuf-dev protobuf-compiler
      libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libcli11-dev zlib1g-dev
      clang-format gdb procps time)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
