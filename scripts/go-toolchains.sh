#!/usr/bin/env bash
# Makes every Go toolchain listed in integration/go-versions.txt available as
#   $GOREF_TOOLCHAINS/go<VERSION>/bin/go      (default GOREF_TOOLCHAINS=~/.cache/goref/toolchains)
# Idempotent. Uses an installed `go` (>= 1.21) to fetch toolchains through the Go module proxy
# (GOTOOLCHAIN=go1.N.M); without one, downloads the same toolchain module zip from $GOPROXY directly.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${GOREF_TOOLCHAINS:-$HOME/.cache/goref/toolchains}
proxy=${GOPROXY:-https://proxy.golang.org}; proxy=${proxy%%,*}
[ "$proxy" = direct ] || [ "$proxy" = off ] && proxy=https://proxy.golang.org
arch=$(uname -m); case "$arch" in x86_64) arch=amd64;; aarch64) arch=arm64;; esac
mkdir -p "$dest"

have_go() { command -v go >/dev/null 2>&1 && go env GOVERSION 2>/dev/null | grep -qE '^go1\.(2[1-9]|[3-9][0-9])'; }

for v in $(grep -vE '^\s*(#|$)' "$root/integration/go-versions.txt"); do
  out="$dest/go$v"
  if [ -x "$out/bin/go" ] && GOTOOLCHAIN=local "$out/bin/go" version 2>/dev/null | grep -q "go$v "; then
    continue
  fi
  rm -rf "$out"
  if have_go && goroot=$(cd /tmp && GOTOOLCHAIN=go$v GOFLAGS= go env GOROOT 2>/dev/null) && [ -x "$goroot/bin/go" ]; then
    ln -sfn "$goroot" "$out"
  else
    command -v curl >/dev/null && command -v unzip >/dev/null || {
      sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
      $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq curl unzip ca-certificates >/dev/null; }
    mod="v0.0.1-go$v.linux-$arch"
    tmp=$(mktemp -d)
    echo "go-toolchains: downloading go$v" >&2
    curl -fsSL "$proxy/golang.org/toolchain/@v/$mod.zip" -o "$tmp/tc.zip"
    unzip -q "$tmp/tc.zip" -d "$tmp/x"
    mv "$tmp/x/golang.org/toolchain@$mod" "$out"
    rm -rf "$tmp"
  fi
  GOTOOLCHAIN=local "$out/bin/go" version | grep -q "go$v " || { echo "go-toolchains: go$v is broken at $out" >&2; exit 1; }
done
echo "$dest"
