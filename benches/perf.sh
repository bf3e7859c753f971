#!/usr/bin/env bash
# The benchmark command: installs lancelet (release build, scripts/setup.sh)
# and the suites' own requirements, then runs every suite, unattended, and
# prints the issue's targets against the measured ratios:
#
#   perf_suite.py    tables A (5M rows, strings) and B (1M 128-float vectors)
#   wide_suite.py    the wide table: filtered scans at 5 selectivities x 5
#                    filter kinds, count_rows, full scan, take, write, bytes
#   memory_suite.py  peak RSS of a streaming 4M-row write and scan
#   s3_suite.py      requests / bytes / times against a local S3 server
#   targets.py       every target, its ratio to pylance and whether it is met
#
# Results (JSON with the commit measured and the load average) go to
# benches/results/. Options:
#   --scale S      row-count factor for every suite (0.1 for a quick run)
#   --label NAME   name part of the result files (default: run)
#   --suites LIST  comma-separated subset of perf,wide,memory,s3
# Set LANCELET_SKIP_SETUP=1 to bench whatever lancelet is importable.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
SCALE=1
LABEL=run
SUITES=perf,wide,memory,s3
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) SCALE="$2"; shift 2 ;;
    --label) LABEL="$2"; shift 2 ;;
    --suites) SUITES="$2"; shift 2 ;;
    *) echo "perf.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ "${LANCELET_SKIP_SETUP:-0}" != 1 ]; then
  bash scripts/setup.sh
fi
"$PY" -m pip install -q --disable-pip-version-check -r benches/requirements.txt
rows() { "$PY" -c "print(max(1000, int($1 * $SCALE)))"; }
echo "load before: $(cat /proc/loadavg)"
case ",$SUITES," in *,perf,*) "$PY" benches/perf_suite.py --scale "$SCALE" --label "$LABEL" --systems lancelet,pylance ;; esac
case ",$SUITES," in *,wide,*) "$PY" benches/wide_suite.py --rows "$(rows 1500000)" --rows-per-file "$(rows 500000)" --label "$LABEL" ;; esac
case ",$SUITES," in *,memory,*) "$PY" benches/memory_suite.py --rows "$(rows 4000000)" --label "$LABEL" ;; esac
case ",$SUITES," in *,s3,*) "$PY" benches/s3_suite.py --rows "$(rows 300000)" --rows-per-file "$(rows 100000)" --label "$LABEL" ;; esac
echo "load after: $(cat /proc/loadavg)"
"$PY" benches/targets.py --latest --label "$LABEL"
