#!/usr/bin/env bash
# Per-op times of the reference models' ops, PyTorch 1.13 and ours, in the same run.
#
#   bench/ops_peer.sh [--rounds N] [BUILD_DIR]      (default: 2 rounds, build/)
#
# Each round runs bench/torch_ops.py (keeping each op's best PyTorch time in one JSON file),
# then BUILD_DIR/ops_bench with TORCH_OPS_JSON naming that file. PyTorch runs in the setup of
# ../shared/bench/torch_peer/run.sh: OpenBLAS with its AVX-512 kernels when run.sh has unpacked
# it under $XDG_CACHE_HOME (run run.sh once), and a malloc that never returns memory.
set -euo pipefail
rounds=2
if [ "${1:-}" = "--rounds" ]; then rounds=$2; shift 2; fi
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "PyTorch missing: apt-get install -y python3-torch" >&2; exit 2; }
lib=${XDG_CACHE_HOME:-$HOME/.cache}/torch_peer_blas/root/usr/lib/x86_64-linux-gnu/openblas-openmp
[ -f "$lib/libblas.so.3" ] || echo "note: OpenBLAS not unpacked (run ../shared/bench/torch_peer/run.sh once); PyTorch uses its default BLAS" >&2
notrim="glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"
out=${TMPDIR:-/tmp}/torch_ops.json round=${TMPDIR:-/tmp}/torch_ops_round.json
echo '{}' > "$out"
for r in $(seq "$rounds"); do
  env LD_LIBRARY_PATH="$lib" OPENBLAS_CORETYPE=SkylakeX GLIBC_TUNABLES="$notrim" \
      /usr/bin/python3 "$here/torch_ops.py" --out "$round" >/dev/null
  /usr/bin/python3 - "$out" "$round" <<'PY'
import json, sys
best, new = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k, v in new.items():
    if k not in best or v["ms_min"] < best[k]["ms_min"]:
        best[k] = v
json.dump(best, open(sys.argv[1], "w"), indent=1)
PY
  TORCH_OPS_JSON=$out "$build/ops_bench"
done
echo "best PyTorch op times: $out"
