# syntax=docker/dockerfile:1
#
# One image for the operator and for the collector it injects into profiled pods:
#   operator:   bottleneck-operator run            (the default command)
#   collector:  bottleneck-operator sidecar --port 9105
# The trained model ships inside the package (bottleneck_operator/model/), so it is in the image.
#
# Base: CPython 3.11 on Debian bookworm slim, pinned by exact version tag and by the digest of the
# multi-architecture index; bump both together, on purpose.

FROM python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_INPUT=1 \
    PIP_ROOT_USER_ACTION=ignore

# The runtime environment: a virtualenv without pip, copied whole into the final stage.
RUN python -m venv --without-pip /opt/venv

WORKDIR /src

# Dependencies first, so their layer survives code changes. Every file is checked against the
# lock's hashes; wheels only, so nothing is compiled and no build script runs.
COPY requirements.lock ./
RUN python -m pip --python /opt/venv/bin/python install --no-cache-dir --require-hashes --only-binary=:all: \
        --no-deps -r requirements.lock

# The runtime package itself, built with a hash-pinned build backend (and no fetched, unpinned one).
# Only it: the offline package beside it (operator/bottleneck_operator_dev/: demo, simulators, local
# Prometheus runners) stays out of the image.
COPY pyproject.toml README.md ./
COPY operator/bottleneck_operator/ ./operator/bottleneck_operator/
RUN printf '%s\n' 'setuptools==84.2.1 --hash=sha256:ca140b45d5325a9478f880e351484f62fef15f336462e449ca0c03c873d589c2' \
        > /tmp/build.lock \
    && python -m pip install --no-cache-dir --require-hashes --only-binary=:all: -r /tmp/build.lock \
    && python -m pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /tmp/wheels . \
    && python -m pip --python /opt/venv/bin/python install --no-cache-dir --no-deps /tmp/wheels/*.whl

FROM python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d AS runtime

LABEL org.opencontainers.image.title="bottleneck-operator" \
      org.opencontainers.image.description="Tells ML teams what limits their training Jobs: operator and collector sidecar" \
      org.opencontainers.image.licenses="Apache-2.0"

# The root filesystem is read-only in the cluster: no bytecode is written at run time (the build
# compiled it), logs go straight to stdout, and HOME points at the writable /tmp.
# glibc's allocator: two arenas (per-thread arenas otherwise keep the analysis thread's freed memory),
# and the arrays one batch of feature extraction frees kept in the heap for the next batch instead of
# returned to the kernel and faulted back in (docs/analysis.md, "Throughput").
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=16777216 \
    MALLOC_TRIM_THRESHOLD_=67108864 \
    HOME=/tmp

COPY --from=build /opt/venv /opt/venv

# A numeric non-root user (the "nonroot" id of distroless images), so runAsNonRoot can verify it.
USER 65532:65532

# 8080 operator metrics, 8081 liveness, 9443 admission webhook, 9105 collector metrics.
EXPOSE 8080 8081 9443 9105

ENTRYPOINT ["bottleneck-operator"]
CMD ["run"]
