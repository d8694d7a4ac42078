# Every target does its own set-up: a fresh machine needs only `make demo` or `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: help demo test lint typecheck unit bench train evaluate lock sbom image crd chart-sync chart-package chart-push dist system-deps clean record record-as-root record-gpu

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): requirements.lock requirements-dev.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

venv: $(STAMP)

system-deps:  ## Debian's prometheus, promtool and node-exporter, when missing
	@scripts/ensure-system-deps.sh

demo: $(STAMP) system-deps  ## the whole loop on this machine, no cluster needed
	$(BIN)/bottleneck-operator demo

lint: $(STAMP)  ## ruff, mypy (strict), import-linter
	$(BIN)/ruff check operator tests bench recordings
	$(BIN)/ruff format --check operator tests bench recordings
	$(BIN)/mypy
	$(BIN)/lint-imports

unit: $(STAMP) system-deps
	$(BIN)/pytest -n 2 -q -p no:cacheprovider

test: lint unit  ## the whole test suite (what CI runs)

bench: $(STAMP) system-deps  ## benchmarks: print figures
	$(BIN)/python -m bench

record-as-root:
	@if [ "$$(id -u)" != 0 ]; then echo "make record needs root: it makes cgroups, a swapfile, network namespaces and tc qdiscs; run: sudo make record" >&2; exit 1; fi

record: record-as-root $(STAMP) system-deps  ## re-record the real bottlenecks under tests/data/real-* (needs root)
	$(BIN)/pip install --quiet 'Pillow>=10'
	PYTHONPATH=$(CURDIR):$(CURDIR)/operator $(BIN)/python -m recordings

GPU_SCENARIOS := gpu-compute gpu-compute-fp32 gpu-compute-neighbour gpu-compute-fed gpu-transformer gpu-hbm gpu-streamed gpu-launch gpu-launch-wide gpu-h2d gpu-h2d-pinned gpu-d2h-pinned gpu-loader gpu-loader-busy gpu-workers0 gpu-workers0-busy gpu-throttled gpu-saturated gpu-io gpu-io-busy gpu-io-neighbour gpu-mmap gpu-objectstore gpu-objectstore-busy gpu-memory gpu-allreduce gpu-launch-fed gpu-checkpoint

record-gpu: record-as-root $(STAMP) system-deps  ## record real PyTorch loops on this machine's GPU under tests/data/gpu-* (root, NVIDIA GPU)
	$(BIN)/pip install --quiet 'Pillow>=10' 'nvidia-ml-py>=12' 'torch>=2.4'
	PYTHONPATH=$(CURDIR):$(CURDIR)/operator $(BIN)/python -m recordings $(GPU_SCENARIOS) --seconds 124 --scrape 5

train: $(STAMP)  ## retrain the shipped model from its seed
	$(BIN)/bottleneck-operator train --output operator/bottleneck_operator/model

evaluate: $(STAMP) system-deps  ## evaluate the shipped model through a real Prometheus
	$(BIN)/bottleneck-operator evaluate

crd: $(STAMP)  ## regenerate the CRD from the report models, then copy it into the chart
	$(BIN)/python scripts/gen-crd.py
	$(MAKE) chart-sync

chart-sync:  ## copy the CRD and the dashboard into the chart (tests fail when they drift)
	mkdir -p charts/bottleneck-operator/crds charts/bottleneck-operator/files
	cp crds/bottleneckreports.bottleneck.dev.yaml charts/bottleneck-operator/crds/
	cp crds/clusterbottlenecksummaries.bottleneck.dev.yaml charts/bottleneck-operator/crds/
	cp dashboards/bottleneck-overview.json charts/bottleneck-operator/files/
	cp dashboards/bottleneck-cluster.json charts/bottleneck-operator/files/
	$(BIN)/python scripts/gen-chart-docs.py

CHART_DIR := charts/bottleneck-operator
CHART_DIST := dist

chart-package: $(STAMP)  ## package the chart (Helm's own packager) as dist/bottleneck-operator-<version>.tgz
	mkdir -p $(CHART_DIST)
	$(BIN)/python -c 'import sys, helm_python as helm; print(helm.package(sys.argv[1], destination=sys.argv[2]))' \
		$(CHART_DIR) $(CHART_DIST)

# A release is this one command. Everything lands in a fresh dist/: the wheel, the chart package and
# the krew archive; SHA256SUMS over them; then the krew manifest, generated from SHA256SUMS (so its
# digest is the published one) into plugins/bottleneck.yaml, which the release commits, and dist/.
dist: $(STAMP)  ## a release: wheel, chart package, krew archive, dist/SHA256SUMS and the krew manifest from them
	rm -rf $(CHART_DIST)
	mkdir -p $(CHART_DIST)
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir $(CHART_DIST) .
	$(MAKE) --no-print-directory chart-package
	$(BIN)/python -m bottleneck_operator.plugin.krew archive $(CHART_DIST)
	$(BIN)/python -m bottleneck_operator.plugin.krew sums $(CHART_DIST)
	$(BIN)/python -m bottleneck_operator.plugin.krew manifest $(CHART_DIST)/SHA256SUMS \
		--version "$$($(BIN)/python -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')" \
		--output plugins/bottleneck.yaml
	cp plugins/bottleneck.yaml $(CHART_DIST)/bottleneck.yaml
	cd $(CHART_DIST) && sha256sum -c --quiet SHA256SUMS

# The registry credentials are Helm's own (`helm registry login HOST` beforehand, or a CI's docker login).
chart-push: chart-package  ## push the packaged chart as an OCI artefact: make chart-push REGISTRY=oci://HOST/PATH
	@case "$(REGISTRY)" in oci://?*) ;; *) echo "set REGISTRY=oci://HOST/PATH, e.g. REGISTRY=oci://ghcr.io/bottleneck-dev/charts" >&2; exit 2;; esac
	$(BIN)/python -c 'import sys, yaml, helm_python as helm; \
		version = yaml.safe_load(open(sys.argv[1] + "/Chart.yaml"))["version"]; \
		archive = sys.argv[2] + "/bottleneck-operator-" + version + ".tgz"; \
		client = helm.RegistryClient(); \
		print(helm.push(archive, sys.argv[3], client=client))' \
		$(CHART_DIR) $(CHART_DIST) "$(REGISTRY)"

lock:  ## re-resolve the locked dependencies
	$(BIN)/pip install --quiet uv
	$(BIN)/uv pip compile --quiet --generate-hashes --python-version 3.11 pyproject.toml -o requirements.lock
	$(BIN)/uv pip compile --quiet --generate-hashes --python-version 3.11 --extra dev pyproject.toml -o requirements-dev.lock

SBOM ?= dist/bottleneck-operator.cdx.json
sbom:  ## CycloneDX SBOM (JSON) of the image's locked dependencies, from requirements.lock alone: $(SBOM)
	python3 scripts/sbom.py --lock requirements.lock --pyproject pyproject.toml --output $(SBOM)

image:  ## build the container image (needs a Docker engine)
	docker build -t bottleneck-operator:dev .

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
