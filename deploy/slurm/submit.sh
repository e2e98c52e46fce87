#!/usr/bin/env bash
# Grade a class on a Slurm cluster: an array of shards (grade-cpu.sbatch, or grade-gpu.sbatch with --gpu), then
# the merge (merge.sbatch), which starts only once every shard has succeeded (--dependency=afterok).
#
#   bash deploy/slurm/submit.sh [--gpu] [--shards N] [--cpus N] COURSE_DIR OUT_DIR [SBATCH OPTIONS...]
#
# COURSE_DIR holds submitted/<student>/<assignment>/*.ipynb; OUT_DIR gets parts/shard-<task>/ (one per array
# task), logs/, and graded/ (the merged results, summaries and class report). Both must be on a file system the
# compute nodes share, as must this checkout with its .venv/ (or set KIT_PYTHON to a Python that has the kit).
# The SBATCH OPTIONS (a partition, an account, a time limit) go to both jobs.
# Prints the two job ids. If a shard fails (exit 3: grader errors), the merge is cancelled: run the same command
# again, and grade-all grades only what is missing (each shard keeps its results).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kit=$(cd "$here/../.." && pwd)
script=grade-cpu.sbatch
shards=4
cpus=4
while [ $# -gt 0 ]; do
    case $1 in
        --gpu) script=grade-gpu.sbatch; shift ;;
        --shards) shards=$2; shift 2 ;;
        --cpus) cpus=$2; shift 2 ;;
        *) break ;;
    esac
done
if [ $# -lt 2 ]; then
    sed -n '5p' "$0" >&2
    exit 2
fi
course=$(realpath "$1")
out=$(realpath -m "$2")
shift 2
mkdir -p "$out/parts" "$out/logs"
vars="ALL,KIT=$kit,COURSE=$course,OUT=$out,KIT_PYTHON=${KIT_PYTHON:-$kit/.venv/bin/python}"
array=$(sbatch --parsable --array="0-$((shards - 1))" --cpus-per-task="$cpus" --export="$vars" \
    --output="$out/logs/%x-%A_%a.out" "$@" "$here/$script")
array=${array%%;*}  # "id;cluster" on a multi-cluster setup
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes --export="$vars" \
    --output="$out/logs/%x-%j.out" "$@" "$here/merge.sbatch")
echo "${array} ${merge%%;*}"
