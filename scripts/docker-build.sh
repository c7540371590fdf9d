#!/usr/bin/env bash
# Builds the SageMaker MME image from docker/Dockerfile with podman or docker, whichever is installed.
#   scripts/docker-build.sh [extra build args...]      e.g. --platform linux/amd64, --no-cache
# Tags sagemaker-mme-node:<package.json version> and :latest.
# Env: IMAGE (default sagemaker-mme-node:<version>, also tagged :latest), NODE_IMAGE (the base, default
# the Dockerfile's node:24-bookworm-slim), ENGINE (podman|docker, default: podman if present).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == --help || ${1:-} == -h ]]; then sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
VERSION=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' package.json)
IMAGE=${IMAGE:-sagemaker-mme-node:$VERSION}
ENGINE=${ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}
command -v "$ENGINE" >/dev/null || { echo "docker-build: neither podman nor docker is installed" >&2; exit 1; }
args=(build -f docker/Dockerfile -t "$IMAGE" --build-arg "VERSION=$VERSION")
[[ $IMAGE == sagemaker-mme-node:$VERSION ]] && args+=(-t sagemaker-mme-node:latest)
[[ -n ${NODE_IMAGE:-} ]] && args+=(--build-arg "NODE_IMAGE=$NODE_IMAGE")
# Docker's image format (not OCI) for podman: ECR and SageMaker take either, Docker-format keeps the labels
# and settings exactly as `docker build` would write them.
[[ $ENGINE == podman ]] && args+=(--format docker)
"$ENGINE" "${args[@]}" "$@" .
echo "built $IMAGE: $("$ENGINE" image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')" >&2
