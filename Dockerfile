# syntax=docker/dockerfile:1
# The Phalanx operator image: ghcr.io/phalanx-sched/phalanx:<version of pyproject.toml>.
#   docker build -t ghcr.io/phalanx-sched/phalanx:0.1.0 .
ARG PYTHON_IMAGE=python:3.11-slim

# Stage 1: build the phalanx wheel and the wheels of its dependencies.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY . .
RUN pip wheel --wheel-dir /wheels .

# Stage 2: the runtime, with only the installed wheels and an unprivileged user.
FROM ${PYTHON_IMAGE}
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    HOME=/tmp MPLCONFIGDIR=/tmp/matplotlib MPLBACKEND=Agg
RUN groupadd --system --gid 65532 phalanx \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin phalanx
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels phalanx \
 && phalanx --help >/dev/null
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["phalanx"]
CMD ["operator"]
