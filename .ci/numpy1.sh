#!/usr/bin/env bash
# The NumPy 1 compatibility job. The main run (.ci/run) is under NumPy 2; this one makes a venv with
# numpy<2 (kept between runs in $FLUIDIST_NUMPY1_VENV, default /tmp/fluidist-numpy1) and runs a
# representative subset there: the Paddle 1.8 compatibility tests (layers against Paddle's numbers,
# module paths, fetched values), local models, the executor, io and the pserver runtime over
# processes. Arguments replace the subset (e.g. `bash .ci/numpy1.sh tests` runs the whole suite).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${FLUIDIST_NUMPY1_VENV:-${TMPDIR:-/tmp}/fluidist-numpy1}"
[ -x "$venv/bin/python" ] || python -m venv "$venv"
"$venv/bin/pip" install -q "numpy>=1.21,<2" "pyzmq>=22" "protobuf>=3.20" "pytest>=7" "pytest-timeout>=2" "pytest-xdist>=3" \
  "hypothesis>=6" "scikit-learn>=1.0" "wheel>=0.37" "setuptools>=61"
"$venv/bin/pip" install -q --no-deps --no-build-isolation -e .
"$venv/bin/python" -c "import numpy, sys; print('NumPy', numpy.__version__); sys.exit(numpy.__version__ >= '2')"
if [ "$#" -eq 0 ]; then
  set -- tests/compat tests/models/test_models_local.py tests/executor tests/test_io.py tests/test_metrics.py \
         tests/transpiler tests/distributed/test_pserver_equivalence.py tests/distributed/test_collective_ops.py
fi
timeout -k 30 900 "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
