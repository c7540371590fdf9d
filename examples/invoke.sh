#!/usr/bin/env bash
# The same requests as invoke.py with curl:  examples/invoke.sh [URL]   (default http://127.0.0.1:8080)
set -euo pipefail
URL=${1:-http://127.0.0.1:8080}
curl -sS --fail-with-body -X POST "$URL/models/mlp/invoke" -H 'Content-Type: application/json' -d '{"inputs":{"input":[[1,2,3,4]]}}'; echo
printf '1,2,3,4\n0,0,0,0\n' | curl -sS --fail-with-body -X POST "$URL/models/mlp/invoke" -H 'Content-Type: text/csv' -H 'Accept: text/csv' --data-binary @-
curl -sS --fail-with-body -X POST "$URL/v2/models/mlp/infer" -H 'Content-Type: application/json' \
  -d '{"id":"1","inputs":[{"name":"input","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}'; echo
