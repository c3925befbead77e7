#!/usr/bin/env bash
# Build the real control-plane binaries from their official Go modules, pinned,
# into a cache outside the checkout, and link them into .local/bin (or $PHALANX_BIN_DIR).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"  # the one pin; `make test-upstream K8S_VERSION=v1.36.3` checks another
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${PHALANX_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phalanx/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}}"
BIN="$CACHE/bin"
WORK="$CACHE/work"
LINKS="${PHALANX_BIN_DIR:-$ROOT/.local/bin}"  # another version links into its own folder
export GOFLAGS="-buildvcs=false -trimpath"
export CGO_ENABLED=0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
mkdir -p "$BIN" "$WORK" "$LINKS"
START=$(date +%s)

# One build at a time per cache: two runs at once on a fresh machine (two checkouts, or a test
# fixture beside `make tools`) would otherwise write the same .tmp files and go.mod, and both
# fail. The second waits for the first, then finds the binaries built and only links them.
exec 9>"$CACHE/.lock"
flock 9

log() { printf '[tools %4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }
fail() { log "FAILED: $1"; [ -f "$2" ] && tail -n 30 "$2" | sed 's/^/    /'; exit 1; }

have() { [ -x "$BIN/$1" ]; }

build_k8s() {
  local wanted=() name
  for name in kube-apiserver kube-controller-manager kube-scheduler kubectl; do have "$name" || wanted+=("$name"); done
  [ ${#wanted[@]} -eq 0 ] && return 0
  local mod="$WORK/k8s" logf="$WORK/k8s.log"
  mkdir -p "$mod"
  log "k8s.io/kubernetes $K8S_VERSION: resolving staging modules"
  local gomod
  gomod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" 2>"$logf" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p') \
    || fail "could not download k8s.io/kubernetes@$K8S_VERSION from the Go module proxy" "$logf"
  [ -n "$gomod" ] || fail "no go.mod for k8s.io/kubernetes@$K8S_VERSION" "$logf"
  local staging_version="v0.${K8S_VERSION#v1.}"
  {
    echo "module phalanx.local/k8s-tools"
    echo
    echo "go 1.25"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    grep -E '^\s*k8s.io/[a-z0-9-]+ => \./staging/' "$gomod" | awk -v v="$staging_version" '{print "replace " $1 " => " $1 " " v}'
  } >"$mod/go.mod"
  cat >"$mod/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  log "k8s.io/kubernetes $K8S_VERSION: go mod tidy ($(grep -c '^replace' "$mod/go.mod") staging replaces)"
  (cd "$mod" && go mod tidy -e >"$logf" 2>&1) || fail "go mod tidy of the kubernetes wrapper module" "$logf"
  for name in "${wanted[@]}"; do
    log "building $name (k8s $K8S_VERSION); the first build takes several minutes"
    local t0=$(date +%s)
    (cd "$mod" && go build -tags tools -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_VERSION#v1.}" \
        -o "$BIN/$name.tmp" "k8s.io/kubernetes/cmd/$name" >"$logf" 2>&1) || fail "building $name from k8s.io/kubernetes@$K8S_VERSION" "$logf"
    mv "$BIN/$name.tmp" "$BIN/$name"
    log "built $name in $(( $(date +%s) - t0 ))s"
  done
}

build_etcd() {
  have etcd && return 0
  local mod="$WORK/etcd" logf="$WORK/etcd.log"
  mkdir -p "$mod"
  log "building etcd $ETCD_VERSION"
  cat >"$mod/go.mod" <<GOMOD
module phalanx.local/etcd-tools

go 1.24

require go.etcd.io/etcd/server/v3 $ETCD_VERSION

replace (
	go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 $ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
)
GOMOD
  cat >"$mod/tools.go" <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  local t0=$(date +%s)
  (cd "$mod" && go mod tidy -e >"$logf" 2>&1 && go build -tags tools -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3 >>"$logf" 2>&1) \
    || fail "building etcd from go.etcd.io/etcd/server/v3@$ETCD_VERSION" "$logf"
  mv "$BIN/etcd.tmp" "$BIN/etcd"
  log "built etcd in $(( $(date +%s) - t0 ))s"
}

build_kwok() {
  have kwok && return 0
  local logf="$WORK/kwok.log"
  log "building kwok $KWOK_VERSION"
  local t0=$(date +%s)
  GOBIN="$WORK/kwok-bin" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >"$logf" 2>&1 \
    || fail "building kwok from sigs.k8s.io/kwok@$KWOK_VERSION" "$logf"
  mv "$WORK/kwok-bin/kwok" "$BIN/kwok"
  log "built kwok in $(( $(date +%s) - t0 ))s"
}

command -v go >/dev/null || { echo "Go is needed to build the Kubernetes binaries" >&2; exit 1; }
build_etcd
build_kwok
build_k8s
for name in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do
  ln -sfn "$BIN/$name" "$LINKS/$name"
done
log "tools ready in $BIN (linked into $LINKS)"
