# Phalanx: `make run` for the demo, `make test` for the whole suite.
SHELL := /bin/bash
PYTHON ?= python3
LOCAL := $(CURDIR)/.local
export PATH := $(LOCAL)/bin:$(PATH)
export KUBECONFIG := $(LOCAL)/kubeconfig
CLUSTER ?= examples/clusters/small.yaml
K8S_VERSION ?= v1.37.2
UPSTREAM_TESTS := tests/workloads/test_upstream_e2e.py tests/foundation/test_workload_api_e2e.py \
                  tests/dra/test_dra_e2e.py
CLUSTER_ARGS ?=
DEMO_ARGS ?=

.PHONY: help install tools helm controllers cluster-up cluster-down run demo demo-dra test test-unit test-e2e \
        lint test-upstream bench bench-core bench-core-12500 bench-packing bench-sim bench-e2e bench-e2e-5000 bench-e2e-12500 bench-smoke \
        bench-report chaos clean

help:
	@echo "make run     build what is missing, start the local cluster, workload controllers, the operator and a demo"
	@echo "make demo-dra  a gang of DRA pods placed in one rack, its ResourceClaims' devices printed"
	@echo "make test    lint, benchmark smoke runs, unit tests and end-to-end tests on a real kube-apiserver + kwok"
	@echo "make test-upstream K8S_VERSION=v1.36.1  Kubernetes' own gang API end-to-end on another release"
	@echo "make tools   build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok (cached)"
	@echo "make helm    build helm (helm.sh/helm/v4, pinned in hack/helm.sh; cached) for charts/phalanx"
	@echo "make bench   core, packing, simulator and end-to-end benchmarks (slow: bench/README.md)"
	@echo "make chaos   replay gangs while SIGKILLing the operator; figures in bench/README.md"
	@echo "make bench-e2e-5000  the end-to-end benchmark at 5,000 nodes (like chaos, not part of make bench)"
	@echo "make bench-e2e-12500  backlog at 12,500 nodes x 8 GPUs: Phalanx, kube-scheduler, the ceiling (not part of make bench)"
	@echo "make bench-report  bench/README.md's tables and docs/benchmarks/*-results.md again from bench/results (runs nothing)"

install:
	@$(PYTHON) -c "import phalanx, kopf, kubernetes_asyncio, hypothesis, mypy" 2>/dev/null \
	  || $(PYTHON) -m pip install -q -e '.[test,dev]'

tools:
	@K8S_VERSION=$(K8S_VERSION) bash hack/tools.sh

# Helm, to install charts/phalanx and for its tests (tests/deploy/test_helm_chart.py).
helm:
	@bash hack/helm.sh

controllers:
	@bash hack/controllers.sh

cluster-up: install tools
	@$(PYTHON) -m phalanx cluster up --cluster $(CLUSTER) $(CLUSTER_ARGS)

cluster-down:
	@$(PYTHON) -m phalanx cluster down

run: install tools
	@$(PYTHON) -m phalanx.demo --interactive --cluster $(CLUSTER) $(DEMO_ARGS)

demo: install tools
	@$(PYTHON) -m phalanx.demo --cluster $(CLUSTER) $(DEMO_ARGS)

# A gang of DRA pods (ResourceClaims from a template) on DRA-only kwok nodes, its claims printed.
demo-dra: install tools
	@$(PYTHON) -m phalanx.demo_dra

lint: install
	$(PYTHON) -m ruff check operator tests bench
	$(PYTHON) -m mypy
	lint-imports
	$(PYTHON) -m bench.report --check

test-unit: install helm
	$(PYTHON) -m pytest -m "not e2e" -q

test-e2e: install tools helm
	$(PYTHON) -m pytest -m e2e -q

# Kubernetes' own gang API end-to-end on another release (its binaries in their own folder):
#   make test-upstream K8S_VERSION=v1.36.1
test-upstream: install
	K8S_VERSION=$(K8S_VERSION) PHALANX_BIN_DIR=$(LOCAL)/k8s-$(K8S_VERSION)/bin bash hack/tools.sh
	PHALANX_BIN_DIR=$(LOCAL)/k8s-$(K8S_VERSION)/bin $(PYTHON) -m pytest -m e2e -q $(UPSTREAM_TESTS)

test: install tools helm lint bench-smoke
	$(PYTHON) -m pytest -q

bench-core: install
	$(PYTHON) -m bench.core

# The core at 12,500 nodes (100,000 GPUs), each scenario in its own process (peak memory).
bench-core-12500: install
	$(PYTHON) -m bench.core.scale

bench-packing: install
	$(PYTHON) -m bench.packing

bench-sim: install
	$(PYTHON) -m bench.sim

bench-e2e: install tools
	$(PYTHON) -m bench.e2e

bench-e2e-5000: install tools
	$(PYTHON) -m bench.e2e --workload bench/workloads/e2e-5000.yaml --rounds 1 \
		--output bench/results/e2e-5000.json

# 12,500 kwok nodes x 8 GPUs (100,000 GPUs) on a control plane with a large cluster's
# settings (bench/workloads/e2e-12500.yaml): backlog mode, Phalanx, kube-scheduler and the
# ceiling (kube-scheduler's gang plugins bind no pod from 5,000 nodes on); kube-apiserver alone held ~4 GiB.
bench-e2e-12500: install tools
	$(PYTHON) -m bench.e2e --workload bench/workloads/e2e-12500.yaml --rounds 1 --mode backlog \
		--only phalanx --only kube-scheduler --only ceiling --output bench/results/e2e-backlog-12500.json

bench: bench-core bench-core-12500 bench-packing bench-sim bench-e2e

chaos: install tools
	$(PYTHON) -m bench.chaos

bench-report: install
	$(PYTHON) -m bench.report

bench-smoke: install tools
	$(PYTHON) -m bench.sim --smoke
	$(PYTHON) -m bench.e2e --smoke

clean: cluster-down
	rm -rf .local/run .pytest_cache .mypy_cache .ruff_cache
