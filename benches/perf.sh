#!/usr/bin/env bash
# The benchmark command: installs lancelet (release build, scripts/setup.sh)
# and the suite's own requirements, then runs benches/perf_suite.py with the
# given arguments (e.g. `--scale 0.1` for a quick run). Results go to
# benches/results/. Set LANCELET_SKIP_SETUP=1 to bench whatever lancelet is
# importable (e.g. a dev copy on PYTHONPATH).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ "${LANCELET_SKIP_SETUP:-0}" != 1 ]; then
  bash scripts/setup.sh
fi
"$PY" -m pip install -q --disable-pip-version-check -r benches/requirements.txt
exec "$PY" benches/perf_suite.py "$@"
