#!/usr/bin/env bash
# The CUDA checks in one run, for a GPU machine with torch, numpy and pytest only: what the driver looks like,
# the self-test on CUDA (chapters side by side), the GPU benchmarks, and the CUDA-touching tests.
#   bash scripts/gpu-check.sh [OUTDIR] [SECONDS]      (default: gpu-check/, 300 s for the self-test)
set -u
out=${1:-gpu-check}
limit=${2:-300}
mkdir -p "$out"
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
step() {  # step NAME SECONDS CMD...: run with a time limit, keep the log, go on after a failure
    local name=$1 limit=$2; shift 2
    echo "=== $name (limit ${limit}s)"
    local t0=$SECONDS
    timeout "$limit" "$@" 2>&1 | tee "$out/$name.log"
    echo "=== $name: exit ${PIPESTATUS[0]} in $((SECONDS - t0)) s"
}
{
    nvidia-smi -L
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-unset} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"
    ldconfig -p | grep -E "libcuda\.so" || echo "libcuda is not in ld.so.cache"
    ls -l /dev/nvidia*
    $py -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else '')"
} 2>&1 | tee "$out/machine.log"
t0=$SECONDS
for ch in $($py -c "from autograder.judging.registry import CHAPTERS; print(*CHAPTERS)"); do
    timeout "$limit" $py -m autograder selftest --device cuda --chapter "$ch" --out "$out/selftest-$ch.json" \
        >"$out/selftest-$ch.log" 2>&1 &
done
wait
echo "=== selftest, chapters side by side: $((SECONDS - t0)) s"
grep -h -E "^(FAIL|info) " "$out"/selftest-*.log | head -80
grep -h -E "expectations met" "$out"/selftest-*.log
step amp_speed 60 $py benchmarks/amp_speed.py
step batch_gather_speed 60 $py benchmarks/batch_gather_speed.py
