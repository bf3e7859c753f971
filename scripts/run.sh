#!/usr/bin/env bash
# The main job: set-up, then the example pipeline on embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 examples/quickstart.py "$@"
