# Sourced by the slow suite's sanitized scripts (amx_sanitized.sh, offset_reads.sh): with src and cc
# set, makes the scratch directory $d (removed on exit) and skips (77) without AVX-512 or without
# AddressSanitizer + UBSan; $d/probe.c is a trivial program for further probes.
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
grep -q avx512bw /proc/cpuinfo || { echo "SKIP: needs AVX-512"; exit 77; }
echo 'int main(void) { return 0; }' >"$d/probe.c"
$cc -fsanitize=address,undefined "$d/probe.c" -o "$d/probe" 2>/dev/null || { echo "SKIP: no ASan/UBSan"; exit 77; }
