#!/usr/bin/env bash
# Build Helm (the client that installs charts/phalanx) from its official Go module, pinned, into
# a cache outside the checkout, and link it into .local/bin (or $PHALANX_BIN_DIR).
#
#   bash hack/helm.sh            (make helm; the chart's tests call it too)
#
# Built inside Helm's own module, with its own go.mod and go.sum (-mod=readonly), as its authors
# build it, the way hack/controllers.sh builds the workload controllers. The first build takes
# minutes; later runs only link.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v4.3.2}"
HELM_MODULE="${HELM_MODULE:-helm.sh/helm/v4}"  # v3 releases live in helm.sh/helm/v3

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_ROOT="${PHALANX_TOOLS_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/phalanx}"
CACHE="$CACHE_ROOT/helm-$HELM_VERSION"
BINARY="$CACHE/bin/helm"
LOGF="$CACHE/build.log"
LINKS="${PHALANX_BIN_DIR:-$ROOT/.local/bin}"
export GOFLAGS="-buildvcs=false -trimpath -mod=readonly"
export CGO_ENABLED=0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
mkdir -p "$CACHE/bin" "$LINKS"
START=$(date +%s)

log() { printf '[helm %4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }
fail() { log "FAILED: $1"; [ -f "$LOGF" ] && tail -n 30 "$LOGF" | sed 's/^/    /'; exit 1; }

command -v go >/dev/null || { echo "Go is needed to build Helm" >&2; exit 1; }

# One build at a time per cache (as hack/tools.sh): two runs at once would write the same
# helm.tmp; the second waits here, then finds the binary built and only links it.
exec 9>"$CACHE/.lock"
flock 9

if [ ! -x "$BINARY" ]; then
  # go mod download -json reports a failure in its JSON (stdout): keep it for fail's tail.
  json=$(go mod download -json "$HELM_MODULE@$HELM_VERSION" 2>"$LOGF") \
    || { printf '%s\n' "$json" >>"$LOGF"; fail "could not download $HELM_MODULE@$HELM_VERSION from the Go module proxy"; }
  src=$(printf '%s\n' "$json" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$src" ] || fail "no source for $HELM_MODULE@$HELM_VERSION"
  log "building helm from $HELM_MODULE@$HELM_VERSION (first build: minutes)"
  t0=$(date +%s)
  # Helm reports this as its version (`helm version`), as its own Makefile sets it.
  (cd "$src" && go build -ldflags "-s -w -X $HELM_MODULE/internal/version.version=$HELM_VERSION" \
      -o "$BINARY.tmp" ./cmd/helm >"$LOGF" 2>&1) || fail "building helm from $HELM_MODULE@$HELM_VERSION"
  mv "$BINARY.tmp" "$BINARY"
  log "built helm in $(( $(date +%s) - t0 ))s"
fi
ln -sfn "$BINARY" "$LINKS/helm"
log "helm $HELM_VERSION ready in $CACHE/bin (linked into $LINKS)"
