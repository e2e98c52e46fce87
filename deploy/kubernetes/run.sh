#!/usr/bin/env bash
# Grade the class on Kubernetes: the Indexed Job of shards, then, only if every shard succeeded, the merge.
#   bash deploy/kubernetes/run.sh [TIMEOUT]      (default 2h; kubectl's current context and namespace)
# Rerunning it grades only what is missing: the Jobs are made again, the results on the volume are kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
timeout=${1:-2h}
kubectl delete job kit-grade kit-merge --ignore-not-found
kubectl apply -f "$here/grade-shards.yaml"
kubectl wait --for=condition=complete --timeout="$timeout" job/kit-grade
kubectl apply -f "$here/merge.yaml"
kubectl wait --for=condition=complete --timeout=30m job/kit-merge
