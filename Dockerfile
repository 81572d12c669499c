# arc-capacity-listener: drop-in replacement image for ARC's listener (`ghalistener`).
#
#   docker build -t arc-capacity-listener:dev .
#
# Two stages: the builder turns this repository into a wheel and installs it with its
# dependencies into /opt/venv; the final image is the same pinned Python base plus that venv,
# nothing else (no compilers, no build tools, no pip cache, no tests). It runs as a numeric
# non-root user and writes nothing to its root filesystem, so `readOnlyRootFilesystem: true`
# works. No HEALTHCHECK: Kubernetes probes /healthz and /readyz on the metrics port.

# python:3.11.14-slim-bookworm, pinned by the digest of its multi-arch index. Any base with
# python3 >= 3.11 and its venv module works (`--build-arg PYTHON_IMAGE=...`): the test suite
# builds on a Debian bookworm made locally with debootstrap (tests/ship/test_image.py).
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# Only the four packages `run`, `status`, `rbac` and `values` import: simulator/, tuning/,
# tests and tools are not in the build context (.dockerignore) and not in the wheel.
COPY pyproject.toml README.md requirements.lock ./
COPY state_machine/ state_machine/
COPY reconciler/ reconciler/
COPY providers/ providers/
COPY scaleset/ scaleset/
COPY listener/ listener/
# Dependencies come from requirements.lock only: exact versions, every file checked against
# its sha256 (--require-hashes), so the same lock gives the same image. Then the wheel of this
# repository, without resolving anything again (--no-deps), refused if it holds any top-level
# package besides the four above (pyproject's packages.find also matches simulator* and
# tuning* for source installs); bytecode is compiled now so nothing is written at run time.
# pip and setuptools are removed: the running image installs nothing. So are the kubernetes
# client's asyncio twin (kubernetes/aio, ~70 MB) and aiohttp with the packages only it needs
# (~15 MB): kubernetes declares them, the listener uses the synchronous client only, and
# tests/ship/test_image.py runs every subcommand and a listener on what is left.
# `python3`, not `python`: Debian's own python3 has no `python` command.
# Refresh the lock with: pip-compile --generate-hashes --strip-extras --allow-unsafe
#   --no-emit-index-url --no-emit-find-links --no-header -o requirements.lock pyproject.toml
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --require-hashes --no-deps -r requirements.lock \
 && /opt/venv/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/venv/bin/python -c "import glob, sys, zipfile; \
    top = {n.split('/')[0] for w in glob.glob('/wheels/*.whl') for n in zipfile.ZipFile(w).namelist()}; \
    extra = sorted(t for t in top if not t.endswith('.dist-info') \
                   and t not in ('state_machine', 'reconciler', 'providers', 'scaleset', 'listener')); \
    sys.exit(f'the wheel holds more than run needs: {extra}' if extra else 0)" \
 && /opt/venv/bin/pip install --no-deps /wheels/*.whl \
 && /opt/venv/bin/pip uninstall --yes setuptools aiohttp aiohttp-retry aiohappyeyeballs \
      aiosignal attrs frozenlist multidict propcache yarl pip \
 && rm -r /opt/venv/lib/python3*/site-packages/kubernetes/aio \
 && printf '%s\n' '#!/bin/sh' \
      '# ARC starts the listener as /ghalistener (controller env LISTENER_ENTRYPOINT).' \
      'exec /opt/venv/bin/arc-capacity-listener run "$@"' > /opt/venv/bin/ghalistener \
 && chmod 0555 /opt/venv/bin/ghalistener

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="arc-capacity-listener" \
      org.opencontainers.image.description="Capacity-aware listener for ARC runner scale sets" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=builder /opt/venv /opt/venv
COPY --from=builder /opt/venv/bin/ghalistener /ghalistener
# 65532 = the conventional "nonroot" uid/gid (distroless); no home, no shell login needed.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["arc-capacity-listener", "run"]
