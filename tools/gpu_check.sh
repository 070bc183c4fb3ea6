#!/bin/bash
# The checks to run on a machine with an NVIDIA GPU (about 2 minutes on one H200), from the project's root:
#   bash tools/gpu_check.sh            # logs and JSON under $OUT (default /tmp/fluidist-gpu-check)
# 1. the tests marked gpu (NCCL, sync batch norm, CuPy itself) beside 2. the suites that run kernels on
# CUDAPlace(0) (FLUIDIST_TEST_DEVICE=cuda: the stand-in subset of .ci/run plus the model zoo and the
# layers); then 3. benchmarks/executor.py --device cuda: fluidist against hand-written CuPy and
# PyTorch CUDA eager, with every read of the device a fluidist step makes.
# A machine without pyzmq can bring its wheel: with WHEELS=dir, the wheels there are installed into a
# private folder first (pip install --target), nothing else is installed.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fluidist-gpu-check}; mkdir -p "$OUT"
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/stages.txt"; }
if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/fluidist-site \
    "$WHEELS"/*.whl || exit 1
  export PYTHONPATH=/tmp/fluidist-site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export FLUIDIST_JOB_SECRET=${FLUIDIST_JOB_SECRET:-gpu-check-secret-gpu-check-secret-0123456789}
{ nvidia-smi -L; python3 -V; python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
  python3 -c "import torch; print('torch', torch.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"; stamp "set up"
( timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider --timeout 150 -rs -n 3 --dist loadfile \
    --junitxml "$OUT/gpu_marked.xml" > "$OUT/gpu_marked.txt" 2>&1; echo "rc=$?" >> "$OUT/gpu_marked.txt" ) &
FLUIDIST_TEST_DEVICE=cuda timeout 210 python3 -m pytest -q -m "not slow" -p no:cacheprovider --timeout 120 -n 12 \
  --dist loadfile --junitxml "$OUT/cuda_suite.xml" tests/device tests/ops tests/control_flow tests/executor \
  tests/test_optimizer.py tests/models/test_models_dist.py tests/models/zoo tests/layers > "$OUT/cuda_suite.txt" 2>&1
echo "rc=$?" >> "$OUT/cuda_suite.txt"
wait
stamp "suites done"; tail -3 "$OUT/gpu_marked.txt"; tail -3 "$OUT/cuda_suite.txt"
grep -E "^(FAILED|ERROR)" "$OUT/cuda_suite.txt" "$OUT/gpu_marked.txt" | cut -c1-220 | head -60
timeout 110 python3 benchmarks/executor.py --device cuda --out "$OUT/executor_cuda.json" > "$OUT/executor_cuda.txt" 2>&1
echo "rc=$?" >> "$OUT/executor_cuda.txt"; stamp "benchmark done"; tail -22 "$OUT/executor_cuda.txt"
