#!/usr/bin/env bash
# Runs the image as SageMaker does (`IMAGE serve`), with a model folder mounted at /opt/ml/models, on a
# local port. Every model directory (or .tar.gz) in the folder can be invoked by name:
#   scripts/docker-run.sh [MODEL_DIR] [-- extra run args...]      MODEL_DIR defaults to ./model-store
#   curl -X POST localhost:8080/models/mlp/invoke -H 'Content-Type: application/json' -d '[[1,2,3,4]]'
# Ctrl-C (or `docker stop`) drains in-flight requests, stops the workers and exits.
# Env: IMAGE (default sagemaker-mme-node:latest), PORT (default 8080), ENGINE (podman|docker).
# Extra run args, e.g. -e SAGEMAKER_MULTI_MODEL=true (load/unload only through the API, as on SageMaker)
# or -e MMS_DEFAULT_WORKERS_PER_MODEL=2.
set -euo pipefail
IMAGE=${IMAGE:-sagemaker-mme-node:latest}
PORT=${PORT:-8080}
ENGINE=${ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}
command -v "$ENGINE" >/dev/null || { echo "docker-run: neither podman nor docker is installed" >&2; exit 1; }
MODELS=$(cd "$(dirname "$0")/.." && pwd)/model-store
if [[ $# -gt 0 && $1 != -- ]]; then MODELS=$1; shift; fi
[[ ${1:-} == -- ]] && shift
[[ -d $MODELS ]] || { echo "docker-run: model folder $MODELS does not exist" >&2; exit 1; }
MODELS=$(cd "$MODELS" && pwd)
tty=(); [[ -t 0 && -t 1 ]] && tty=(-it)
echo "serving $MODELS on http://127.0.0.1:$PORT (image $IMAGE)" >&2
exec "$ENGINE" run --rm "${tty[@]}" -p "$PORT:8080" -v "$MODELS:/opt/ml/models:ro" "$@" "$IMAGE" serve
