#!/usr/bin/env bash
# Everything docs/performance.md's "Eager kernels against PyTorch" section reports, in one run:
#
#   bench/perf_report.sh [BUILD_DIR]        (default build/; from the repository root)
#
# 1. the machine, date and load;
# 2. ../shared/bench/torch_peer/run.sh -- BUILD_DIR/models_bench: PyTorch 1.13's training step
#    for mlp / block / gpt4, then ours (eager and compiled) with the ratios, 2 rounds;
# 3. bench/ops_peer.sh: each model op, PyTorch and ours at the same shapes;
# 4. BUILD_DIR/copy_bench: strided copies against memcpy (issue 11 item 3);
# 5. `perf record` of each model's training steps (models_bench MODEL, eager and compiled) and
#    the top 10 symbols by self time; oneDNN's JIT-generated GEMM code has no symbol and shows
#    as one "[JIT] tid N" line.
# Needs the targets models_bench, ops_bench and copy_bench built in BUILD_DIR, python3-torch
# (for 2 and 3) and perf (for 5). Every figure is from this one run: on a shared machine, quote
# the load line with them, and run with OMP_WAIT_POLICY=passive (spinning OpenMP workers stall
# every parallel region when other processes want the cores; see docs/performance.md). Usually:
#
#   OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive bench/perf_report.sh build
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
peer=$root/../shared/bench/torch_peer/run.sh
[ -x "$peer" ] || peer=/work/shared/bench/torch_peer/run.sh
echo "== machine"
date -u
lscpu | grep -E 'Model name|^CPU\(s\)|L2 cache|L3 cache' | sed 's/  */ /g'
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)  OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}  OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}"
git -C "$root" log -1 --format='commit %h %s' 2>/dev/null || true
echo "== training step against PyTorch ($peer)"
"$peer" --rounds 2 -- "$build/models_bench"
echo "== per op against PyTorch"
"$here/ops_peer.sh" --rounds 1 "$build"
echo "== strided copies"
"$build/copy_bench" 10
echo "== perf: top 10 symbols by self time, per model"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for m in mlp block gpt4; do
  echo "-- $m"
  perf record -q -F 499 -o "$tmp/$m.data" "$build/models_bench" 1 "$m" >/dev/null 2>&1
  # Whole reports into files first: `head` closing a pipe early would stop the script (pipefail).
  perf report -i "$tmp/$m.data" --no-children --sort dso --stdio >"$tmp/$m.dso" 2>/dev/null || true
  perf report -i "$tmp/$m.data" --no-children --sort symbol --stdio >"$tmp/$m.sym" 2>/dev/null || true
  echo "by library (oneDNN's GEMM is the [JIT] line):"
  grep -E '^ +[0-9.]+%' "$tmp/$m.dso" | sed -n 1,4p
  echo "top 10 symbols:"
  grep -E '^ +[0-9.]+%' "$tmp/$m.sym" | sed -n 1,10p | cut -c1-150
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
