# Two commands for a newcomer: `make demo` and `make test`. Everything else is for developers.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Inner loop: make check. Before a push: make test.
.PHONY: demo test check image-test e2e e2e-build lint typecheck docs bench clean venv

# Says what it is doing: a first install downloads and builds about 60 packages (a minute or
# two) and would otherwise look stuck.
$(STAMP): pyproject.toml
	@echo "venv: creating $(VENV) with $(PYTHON) (first time only)"
	@$(PYTHON) -m venv $(VENV)
	@echo "venv: upgrading pip"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "venv: installing this project and its dev tools into $(VENV) (about 1-2 minutes)..."
	@$(BIN)/python -m pip install --quiet --progress-bar off -e '.[dev]'
	@touch $(STAMP)
	@echo "venv: ready ($(VENV)/bin/arc-capacity-listener)"

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m listener demo

# pytest on one worker per core (pytest-xdist; 2 on the CI machine), a test file's tests all on
# one worker: module- and session-scoped fixtures (the fault matrix's ~100 s of cases) are then
# computed once, not once per worker. Files go out in collection order: xdist's default (most
# tests first) left the few-test, real-time e2e files for last, on one worker while the other
# idled. One file alone: $(BIN)/python -m pytest tests/<area>/<file>.py (docs/benchmarks.md).
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict state_machine reconciler providers scaleset listener
	$(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder

# The inner loop: the unit tests of state_machine, reconciler, scaleset, providers (demand
# sources; the Kubernetes provider's pure roles: observe, placement, pods) and listener, in one
# process. Left to make test: the hypothesis properties (about
# two minutes), subprocess runs of the command line, live worlds, the simulated days, e2e.
# Under a minute on an idle 2-core machine (docs/design.md#layout: the developer loop).
CHECK_TESTS := tests/state_machine tests/reconciler tests/scaleset tests/providers/demand \
	tests/providers/test_backoff.py tests/providers/kubernetes/observe \
	tests/providers/kubernetes/placement tests/providers/kubernetes/pods tests/listener
CHECK_SKIP := --ignore=tests/reconciler/test_properties.py \
	--ignore=tests/reconciler/test_hot_properties.py \
	--ignore=tests/listener/test_command_line_messages.py
check: $(STAMP)
	$(BIN)/python -m pytest -n 0 $(CHECK_TESTS) $(CHECK_SKIP)

# Builds the real Dockerfile with buildah on a debootstrap'd base and runs it with podman
# (minutes; skipped, saying why, where those tools are missing). .ci/run runs it after make test.
image-test: $(STAMP)
	$(BIN)/python -m pytest -m image tests/ship/test_image.py

# The listener under the real control plane (docs/e2e-real.md): builds the pinned upstream
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok, Karpenter's kwok
# provider and ARC's controller into ~/.cache/arc-capacity-e2e (needs Go and the Go module proxy;
# a warm cache is a no-op), runs every scenario on loopback, writes out/e2e/report.{json,md} and
# exits non-zero when an invariant fails. `make e2e E2E="burst drain"` runs only those.
e2e-build: $(STAMP)
	$(BIN)/python -m e2e.build

e2e: $(STAMP)
	$(BIN)/python -m e2e $(E2E)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy --strict state_machine reconciler providers scaleset listener

docs: $(STAMP)
	$(BIN)/python -m tools.gendocs
	$(BIN)/python -m tools.alert_rules
	$(BIN)/python -m tools.install_manifests
	$(BIN)/python -m listener.observability.metrics
	$(BIN)/python -m tools.fault_matrix

bench: $(STAMP)
	$(BIN)/python bench/reconcile_step.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache out
