#!/bin/sh
# bench/amx_sitting.sh run, one round, on this build (suite 'slow', ~3 min on 2 cores): the tests it
# runs pass, and every step left its JSON lines. Without AMX that is the script's dry run.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ROUNDS=1 sh "$src/bench/amx_sitting.sh" run "$out" "$1" >/dev/null
label=$(basename "$1")
cat "$out/tests.txt"
[ "$(grep -c ': ok$' "$out/tests.txt")" -eq 3 ] || { echo "a test failed"; exit 1; }
for s in decode layer rows1 rows2; do
  grep -q "^{\"sitting_step\":\"$s\"," "$out/$label.jsonl" || { echo "step $s: no JSON lines"; exit 1; }
done
python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$out/$label.jsonl"
echo "amx_sitting: ok"
