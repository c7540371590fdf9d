#!/usr/bin/env bash
# Builds the SageMaker MME image from docker/Dockerfile with podman or docker, whichever is installed.
#   scripts/docker-build.sh [extra build args...]      e.g. --platform linux/amd64, --no-cache
# Env: IMAGE (default sagemaker-mme-node:latest), ENGINE (podman|docker, default: podman if present).
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-sagemaker-mme-node:latest}
ENGINE=${ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}
command -v "$ENGINE" >/dev/null || { echo "docker-build: neither podman nor docker is installed" >&2; exit 1; }
args=(build -f docker/Dockerfile -t "$IMAGE")
# Docker's image format (not OCI) for podman: ECR and SageMaker take either, Docker-format keeps the labels
# and settings exactly as `docker build` would write them.
[[ $ENGINE == podman ]] && args+=(--format docker)
"$ENGINE" "${args[@]}" "$@" .
echo "built $IMAGE: $("$ENGINE" image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')" >&2
