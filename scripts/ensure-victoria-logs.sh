#!/usr/bin/env bash
# Build VictoriaLogs' single-node server (Apache-2.0) for the log-store integration test.
#
# It comes from the Go module proxy with `go install`, pinned to one version, and is
# cached under the stack's cache folder keyed by that version, so it builds once per
# machine (about 3 minutes on 2 cores) and a second run is instant.
#
# Prints the path as `victoria-logs=<path>` and exits 0; when the build fails it
# prints why and exits 1, and the test that needs the server skips with that reason.
set -euo pipefail

VERSION=v1.52.2
MODULE=github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs

CACHE="${TRACEBOUND_STACK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tracebound}"
HOME_DIR="$CACHE/victoria-logs/$VERSION"
SERVER="$HOME_DIR/bin/victoria-logs"

say() { echo "ensure-victoria-logs: $*" >&2; }

build_server() {
  local stage="$HOME_DIR/stage"
  rm -rf "$stage"
  mkdir -p "$stage" "$HOME_DIR/bin"
  say "building victoria-logs $VERSION with go install (about 3 minutes on 2 cores; log $HOME_DIR/build.log)"
  CGO_ENABLED=0 GOBIN="$stage" go install "$MODULE@$VERSION" >"$HOME_DIR/build.log" 2>&1
  mv "$stage/victoria-logs" "$SERVER"
  rm -rf "$stage"
}

if [ ! -x "$SERVER" ]; then
  command -v go >/dev/null 2>&1 || { say "go is missing: cannot build victoria-logs"; exit 1; }
  build_server || { say "the build failed; see $HOME_DIR/build.log"; exit 1; }
fi
"$SERVER" -version >/dev/null 2>&1 || { say "$SERVER does not run on this machine"; exit 1; }
echo "victoria-logs=$SERVER"
