#!/bin/bash
# Golden outputs for speed work. A run is a pure function of (model, options, seed, dsgd
# version): an optimisation must not change a single bit of any run. A change of numerics
# (elementary functions, generator, transform) may: make new golden outputs after it, and say
# in its commit message why results moved.
#   scripts/golden.sh make  DIR [DSGD]   write `run --json` (minus `seconds`) of every built-in
#                                        model x estimator x seeds 0, 1 at --iters 2000 to DIR,
#                                        with the paper's optimiser (Adam at the model's step)
#   scripts/golden.sh check DIR [DSGD]   the same into a temporary directory, compared with DIR
# DSGD defaults to target/release/dsgd (build it first). Takes a few seconds.
set -euo pipefail
mode=$1; dir=$2; bin=${3:-target/release/dsgd}
write() {
  local out=$1; mkdir -p "$out"
  # Pinned to the paper's absolute eta (the default is eta relative to each guard's spread),
  # so that outputs made before that option existed still compare.
  for m in example temperature xornet walk cheating textmsg influenza; do
    for e in dsgd fixed score reparam lyy18; do
      for s in 0 1; do
        "$bin" run $m --estimator $e --optimizer adam --eta-scale absolute --iters 2000 --seed $s --json --threads 1 2>/dev/null \
          | sed -E 's/"seconds": ?[0-9.eE+-]+,?//' > "$out/$m.$e.$s.json" || true
      done
    done
  done
}
case $mode in
  make) write "$dir"; echo "wrote $(ls "$dir" | wc -l) golden outputs to $dir" ;;
  check)
    tmp=$(mktemp -d); write "$tmp"
    if diff -rq "$dir" "$tmp"; then echo "GOLDEN-OK"; rm -rf "$tmp"; else echo "GOLDEN-DIFFER (new outputs in $tmp)"; exit 1; fi ;;
  *) echo "usage: $0 make|check DIR [DSGD]"; exit 2 ;;
esac
