#!/bin/sh
# bench/mca_tiles.py on this checkout (slow suite): a modelled cycle count for every tile height of
# two low-bit families (the f32 rows' b4f, W4A8's q4); skipped (77) without llvm-mca.
root=$1
command -v llvm-mca >/dev/null 2>&1 || { echo "llvm-mca not installed (apt-get install -y llvm): skipped"; exit 77; }
out=$(python3 "$root/bench/mca_tiles.py" --tiles b4f,q4 --root "$root") || exit 1
echo "$out"
n=$(echo "$out" | python3 -c 'import sys, json; print(sum(d["cycles_per_iteration"] > 0 and d["dot_products"] > 0 for d in map(json.loads, sys.stdin)))')
[ "$n" = 9 ] || { echo "mca_tiles: expected 9 modelled tiles (b4f 1-4 rows, q4 1-5), got $n"; exit 1; }
