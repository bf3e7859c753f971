#!/usr/bin/env bash
# The main job: set-up (release build, PySpark, a JRE if missing), then the
# Spark pipeline on embedded defaults (local[2], files under ./demo-output).
# Extra arguments go to the pipeline, e.g. `--rows 5000000`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 examples/spark_pipeline.py "$@"
