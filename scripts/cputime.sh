#!/bin/bash
# Compares the CPU time of builds on a fixed amount of work, robustly on a shared machine:
# runs `BIN MODEL ESTIMATOR ITERATIONS` for each binary in turn, REPS rounds (default 9),
# and reports each binary's minimum `perf stat` task-clock and the samples per second it
# implies (16 samples per iteration).
#   scripts/cputime.sh MODEL ESTIMATOR ITERATIONS BIN...
# The binaries are builds of `examples/engine_work.rs` (copy target/release/examples/engine_work
# aside before changing the code). Needs `perf`.
set -euo pipefail
m=$1; e=$2; n=$3; shift 3
declare -A best
for rep in $(seq 1 "${REPS:-9}"); do
  for b in "$@"; do
    t=$(perf stat -x, -e task-clock "$b" "$m" "$e" "$n" 2>&1 >/dev/null | grep task-clock | cut -d, -f1)
    best[$b]=$(python3 -c "print(min(${best[$b]:-1e18}, $t))")
  done
done
for b in "$@"; do
  python3 -c "print('%-28s %s %s %9.1f ms  %.3e samples/s' % ('$b', '$m', '$e', ${best[$b]}, $n * 16 / (${best[$b]} / 1000)))"
done
