#!/bin/sh
# moe as a Meson subproject of a C-only consumer (subprojects/moe is a link to this source tree).
# CXX names a compiler that does not exist, so setup fails if moe asks for C++. Checks that the only
# things moe builds there are libmoe's (no tests, examples or benchmarks), and that a header-only
# program (dependency('moe')) and a libmoe program (libmoe_dep) link and run.
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
app="$out/consumer"
mkdir -p "$app/subprojects"
ln -s "$src" "$app/subprojects/moe"
cat >"$app/meson.build" <<'EOF'
project('consumer', 'c')
moe = subproject('moe')
executable('header_only', 'header_only.c', dependencies: dependency('moe'))
executable('linked', 'linked.c', dependencies: moe.get_variable('libmoe_dep'))
EOF
cat >"$app/header_only.c" <<'EOF'
#define MOE_IMPLEMENTATION
#include "moe.h"
int main(void) { return moe_f32_to_bf16(1.0f) == 0x3F80 && moe_precision_name(MOE_PREC_INT8) ? 0 : 1; }
EOF
cat >"$app/linked.c" <<'EOF'
#include "moe.h"
int main(void) { return moe_bf16_to_f32(0x3F80) == 1.0f && moe_status_str(MOE_OK) ? 0 : 1; }
EOF
fail() { echo "FAIL: $*"; [ -f "$out/log" ] && cat "$out/log"; exit 1; }
CXX=/nonexistent/c++ ${MESON:-meson} setup "$out/build" "$app" >"$out/log" 2>&1 || fail "meson setup of the consumer"
# link steps of the subproject, "path: rule" (static and shared link rules)
ninja -C "$out/build" -t targets all | grep -E '^subprojects/moe/[^ ]*: [A-Za-z_]*LINKER$' >"$out/linked"
if grep -v '^subprojects/moe/libmoe\.' "$out/linked" >"$out/log"; then fail "moe built more than libmoe"; fi
grep -q 'libmoe\.so' "$out/linked" || fail "libmoe.so is not built (link steps: $(cat "$out/linked"))"
${MESON:-meson} compile -C "$out/build" >"$out/log" 2>&1 || fail "consumer build"
"$out/build/header_only" || fail "header_only did not run"
"$out/build/linked" || fail "linked did not run"
echo "subproject: only libmoe built ($(wc -l <"$out/linked") link steps); both consumer programs ran"
