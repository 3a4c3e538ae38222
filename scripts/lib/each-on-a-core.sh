# Shell functions for scripts that run independent jobs side by side (scripts/fuzz,
# scripts/test-shards). Sourced, not run.

# The machine's cores. GNU nproc answers OMP_NUM_THREADS (and OMP_THREAD_LIMIT) when they are set,
# and the ASan stage sets OMP_NUM_THREADS=1 for the tests it runs.
cores() {
  env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc
}

# each_on_a_core RESULTS FUNCTION ITEM...: runs `FUNCTION ITEM` for every item, one per core at a
# time. FUNCTION writes RESULTS/ITEM.result: one line, or, for a failure, a first line containing
# FAILED and any lines after it. When all have ended, prints the results in the items' order and
# returns nonzero when one says FAILED or is missing (a job that died before writing it).
each_on_a_core() {
  local results=$1 fn=$2 jobs item failed=0
  shift 2
  jobs=$(cores)
  mkdir -p "$results"
  for item in "$@"; do rm -f "$results/$item.result"; done
  for item in "$@"; do
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
    "$fn" "$item" &
  done
  wait || true
  for item in "$@"; do
    if [[ ! -f $results/$item.result ]]; then
      echo "$item: FAILED (no result written)"
      failed=1
      continue
    fi
    cat "$results/$item.result"
    grep -q FAILED "$results/$item.result" && failed=1
  done
  return $failed
}
