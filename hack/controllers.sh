#!/usr/bin/env bash
# Build the workload controllers the integration tests run against (JobSet, LeaderWorkerSet,
# Kubeflow Trainer v2, training-operator v1, KubeRay's ray-operator and Kubeflow mpi-operator v2)
# from their Go modules, pinned, into a cache outside the checkout, and link
# them into .local/bin; their CRDs and webhook configurations (and Trainer's runtimes) are
# copied from the module's own manifests into .local/controllers/NAME.
#
#   bash hack/controllers.sh [jobset] [lws] [trainer] [training-operator] [kuberay] [mpi-operator]
#   (default: all six)
#
# Each is built inside its own module, with its own go.mod and go.sum, as its authors build
# it. The end-to-end fixtures call this script for the controller a test needs, so only the
# tests that use a controller pay for its build (minutes, once; later runs only link).
set -euo pipefail

JOBSET_VERSION="${JOBSET_VERSION:-v0.11.1}"
LWS_VERSION="${LWS_VERSION:-v0.8.0}"
TRAINER_VERSION="${TRAINER_VERSION:-v2.2.0}"
TRAINING_OPERATOR_VERSION="${TRAINING_OPERATOR_VERSION:-v1.8.1}"
KUBERAY_VERSION="${KUBERAY_VERSION:-v1.5.0}"
MPI_OPERATOR_VERSION="${MPI_OPERATOR_VERSION:-v0.8.0}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_ROOT="${PHALANX_TOOLS_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/phalanx}"
LINKS="$ROOT/.local/bin"
MANIFESTS="$ROOT/.local/controllers"
export GOFLAGS="-buildvcs=false -trimpath -mod=readonly"
export CGO_ENABLED=0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
START=$(date +%s)

log() { printf '[controllers %4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }
fail() { log "FAILED: $1"; [ -f "$2" ] && tail -n 30 "$2" | sed 's/^/    /'; exit 1; }

# build NAME MODULE VERSION PACKAGE CRD_FILES WEBHOOK_FILES [EXTRA_FILES]
# (file lists are globs relative to the module, WEBHOOK_FILES may be empty; EXTRA_FILES go
# to extra/)
build() {
  local name="$1" module="$2" version="$3" package="$4" crds="$5" webhooks="$6" extra="${7:-}"
  local cache="$CACHE_ROOT/controllers/$name-$version"
  local binary="$cache/bin/$name" logf="$cache/build.log"
  mkdir -p "$cache/bin" "$LINKS" "$MANIFESTS"
  # One build of a controller at a time: a second run waits here, then finds the binary.
  exec 8>"$cache/.lock"
  flock 8
  local src
  src=$(go mod download -json "$module@$version" 2>"$logf" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p') \
    || fail "could not download $module@$version from the Go module proxy" "$logf"
  [ -n "$src" ] || fail "no source for $module@$version" "$logf"
  if [ ! -x "$binary" ]; then
    log "building $name from $module@$version (first build: minutes)"
    local t0=$(date +%s)
    (cd "$src" && go build -ldflags "-s -w" -o "$binary.tmp" "./$package" >"$logf" 2>&1) \
      || fail "building $name from $module@$version" "$logf"
    mv "$binary.tmp" "$binary"
    log "built $name in $(( $(date +%s) - t0 ))s"
  fi
  # The manifests go to this checkout's .local/controllers/NAME on every run (cheap, so they
  # always match this script), swapped in whole so a reader never sees a half-copied folder.
  local target="$MANIFESTS/$name" fresh="$MANIFESTS/.$name.$$"
  mkdir -p "$fresh/crds" "$fresh/webhooks" "$fresh/extra"
  (cd "$src" && cp $crds "$fresh/crds/")
  rm -f "$fresh/crds/kustomization.yaml"
  [ -z "$webhooks" ] || (cd "$src" && cp $webhooks "$fresh/webhooks/")
  [ -z "$extra" ] || (cd "$src" && cp $extra "$fresh/extra/")
  chmod -R u+w "$fresh"
  [ -L "$target" ] && rm -f "$target"
  rm -rf "$target.old"; [ -e "$target" ] && mv "$target" "$target.old"
  mv "$fresh" "$target" && rm -rf "$target.old"
  ln -sfn "$binary" "$LINKS/$name"
}

command -v go >/dev/null || { echo "Go is needed to build the controllers" >&2; exit 1; }
[ $# -gt 0 ] || set -- jobset lws trainer training-operator kuberay mpi-operator
for wanted in "$@"; do
  case "$wanted" in
    jobset) build jobset sigs.k8s.io/jobset "$JOBSET_VERSION" . \
              "config/components/crd/bases/*.yaml" \
              "config/components/webhook/manifests.yaml config/components/webhook/patches/*.yaml" ;;
    lws) build lws sigs.k8s.io/lws "$LWS_VERSION" cmd "config/crd/bases/*.yaml" \
           "config/webhook/manifests.yaml config/webhook/*-patch.yaml" ;;
    trainer) build trainer github.com/kubeflow/trainer/v2 "$TRAINER_VERSION" \
               cmd/trainer-controller-manager "manifests/base/crds/*.yaml" \
               "manifests/base/webhook/manifests.yaml" \
               "manifests/base/runtimes/torch_distributed.yaml" ;;
    # training-operator v1 without its MPIJob (kubeflow.org/v1): mpi-operator's v2beta1 CRD has
    # that name (workload_controllers runs it with every other --enable-scheme).
    training-operator) build training-operator github.com/kubeflow/training-operator \
                         "$TRAINING_OPERATOR_VERSION" cmd/training-operator.v1 \
                         "$(printf 'manifests/base/crds/kubeflow.org_%s.yaml ' \
                            pytorchjobs tfjobs mxjobs xgboostjobs paddlejobs)" \
                         "manifests/base/webhook/manifests.yaml" ;;
    kuberay) build kuberay github.com/ray-project/kuberay/ray-operator "$KUBERAY_VERSION" . \
               "config/crd/bases/*.yaml" "" ;;
    mpi-operator) build mpi-operator github.com/kubeflow/mpi-operator "$MPI_OPERATOR_VERSION" \
                    cmd/mpi-operator "manifests/base/kubeflow.org_mpijobs.yaml" "" ;;
    *) echo "unknown controller $wanted (jobset, lws, trainer, training-operator, kuberay," \
            "mpi-operator)" >&2; exit 2 ;;
  esac
done
log "controllers ready: $* (linked into .local/bin, manifests in .local/controllers)"
