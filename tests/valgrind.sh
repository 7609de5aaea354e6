#!/bin/sh
# Valgrind memcheck over the demo and the layer, pack and packed-file tests at small sizes (suite
# 'slow': `meson test -C build --suite slow valgrind`, ~4 min). Valgrind's virtual CPU has no
# AVX-512 or AMX, so the layer runs the scalar and AVX2 tiers (the sanitized suite covers the rest).
# A memcheck error or a definite leak fails (libgomp's pool threads leave "possibly lost" TLS).
#   tests/valgrind.sh BUILD_DIR
b=${1:?usage: valgrind.sh BUILD_DIR}
command -v valgrind >/dev/null || { echo "SKIP: no valgrind"; exit 77; }
vg="valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite"
export OMP_NUM_THREADS=1
fail=0
run() {
  if $vg "$@" >/tmp/moe-valgrind.$$ 2>&1; then echo "ok: $*: $(tail -n 1 /tmp/moe-valgrind.$$)"
  else echo "FAIL: $*"; cat /tmp/moe-valgrind.$$; fail=1; fi
}
for isa in scalar avx2; do
  run "$b/examples/moe_demo" --experts 8 --n 64 --m 4 --runs 1 --threads 1 --isa $isa
done
run "$b/tests/test_pack"
run "$b/tests/test_packfile"
run "$b/tests/test_layer" --quick
rm -f /tmp/moe-valgrind.$$
exit $fail
