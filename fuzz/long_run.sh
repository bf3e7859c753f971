#!/usr/bin/env bash
# Long fuzzing runs, one target at a time, at the lowest CPU priority:
#
#   bash fuzz/long_run.sh [SECONDS] [TARGET...]     (default: 1800 s, every target)
#
# Each run starts from the committed corpus (fuzz/corpus/<target>, read
# only) and keeps what it finds in $LONG_RUN_DIR/<target> (default
# /tmp/lancelet-fuzz-long); crashes go to fuzz/artifacts/<target>/. The
# libFuzzer log of each run is $LONG_RUN_DIR/<target>.log and one result
# line per run is appended to $LONG_RUN_DIR/results.tsv:
#   target  seconds  executions  exec/s  cov  ft  corpus  peak_rss_mb  crashes
#
# SECONDS is a budget of CPU time, not of wall time: the machine is shared
# and the fuzzer runs at nice 19, so a wall-clock limit would measure the
# neighbours' load. A watchdog sums the fuzzer's user+system time and
# interrupts it (SIGINT: libFuzzer prints its final stats) once the budget is
# spent. LONG_RUN_WALL=1 restores libFuzzer's own wall-clock limit.
set -uo pipefail
cd "$(dirname "$0")"
export PATH="$HOME/.cargo/bin:$PATH"
SECS="${1:-1800}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  mapfile -t TARGETS < <(cargo +nightly fuzz list)
fi
OUT="${LONG_RUN_DIR:-/tmp/lancelet-fuzz-long}"
mkdir -p "$OUT"
for t in "${TARGETS[@]}"; do
  mkdir -p "$OUT/$t" "corpus/$t"
  before=$(ls "artifacts/$t" 2>/dev/null | wc -l)
  # -a: overflow checks and debug assertions on (an overflow is a finding).
  # -timeout: an input that takes 30 s is a hang; -malloc_limit_mb: one
  # allocation over 512 MiB from an input of at most a few hundred KiB is
  # an allocation bomb.
  if [ "${LONG_RUN_WALL:-0}" = 1 ]; then limit="-max_total_time=$SECS"; else limit="-max_total_time=$((SECS * 100))"; fi
  : > "$OUT/$t.log"
  # Built first so that compiling is not charged to the budget.
  nice -n 19 cargo +nightly fuzz build -O -a "$t" >> "$OUT/$t.log" 2>&1
  nice -n 19 cargo +nightly fuzz run -O -a "$t" "$OUT/$t" "corpus/$t" -- \
    "$limit" -seed=1 -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -print_final_stats=1 >> "$OUT/$t.log" 2>&1 &
  runner=$!
  bin="x86_64-unknown-linux-gnu/release/$t "
  while kill -0 "$runner" 2>/dev/null; do
    sleep 5
    pid=$(pgrep -n -f -- "$bin" || true)
    [ -n "$pid" ] || continue
    cpu=$(awk '{print int(($14 + $15) / 100)}' "/proc/$pid/stat" 2>/dev/null || echo 0)
    if [ "${LONG_RUN_WALL:-0}" != 1 ] && [ "$cpu" -ge "$SECS" ]; then
      kill -INT "$pid"
      wait "$runner"
    fi
  done
  after=$(ls "artifacts/$t" 2>/dev/null | wc -l)
  last=$(grep -E '^#[0-9]+' "$OUT/$t.log" | tail -1)
  stat() { grep -E "^stat::$1:" "$OUT/$t.log" | tail -1 | awk '{print $2}'; }
  cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | awk '{print $2}')
  ft=$(echo "$last" | grep -oE 'ft: [0-9]+' | awk '{print $2}')
  corp=$(echo "$last" | grep -oE 'corp: [0-9]+/[0-9a-zA-Z]+' | awk '{print $2}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$SECS" "$(stat number_of_executed_units)" "$(stat average_exec_per_sec)" \
    "$cov" "$ft" "$corp" "$(stat peak_rss_mb)" "$((after - before))" >> "$OUT/results.tsv"
done
