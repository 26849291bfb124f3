#!/bin/bash
# Compares the CPU time of builds on a fixed amount of work, robustly on a shared machine:
# runs `BIN MODEL ESTIMATOR ITERATIONS BATCH` for each binary in turn, REPS rounds (default 9),
# one thread pinned to one core (CORE, default 1), and reports each binary's minimum
# `perf stat` task-clock and the samples per second it implies.
#   [REPS=25] [BATCH=16] [CORE=1] scripts/cputime.sh MODEL ESTIMATOR ITERATIONS BIN...
# The binaries are builds of `examples/engine_work.rs` (copy target/release/examples/engine_work
# aside before changing the code). Only ratios from one invocation mean anything: other
# work on the machine moves absolute times by 10-30 %. Needs `perf` and `taskset`.
set -euo pipefail
m=$1; e=$2; n=$3; shift 3
batch=${BATCH:-16}
declare -A best
for rep in $(seq 1 "${REPS:-9}"); do
  for b in "$@"; do
    t=$(RAYON_NUM_THREADS=1 perf stat -x, -e task-clock taskset -c "${CORE:-1}" "$b" "$m" "$e" "$n" "$batch" 2>&1 >/dev/null | grep task-clock | cut -d, -f1)
    best[$b]=$(python3 -c "print(min(${best[$b]:-1e18}, $t))")
  done
done
for b in "$@"; do
  python3 -c "print('%-28s %s %s %9.1f ms  %.3e samples/s' % ('$b', '$m', '$e', ${best[$b]}, $n * $batch / (${best[$b]} / 1000)))"
done
