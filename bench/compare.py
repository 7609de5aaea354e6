#!/usr/bin/env python3
"""Before/after table of bench JSON lines (bench_layer and bench_kernels output), as Markdown.

    python3 bench/compare.py --before base-1.jsonl base-2.jsonl --after new-1.jsonl new-2.jsonl

Each file is one round of one build; run the two builds' rounds interleaved in one sitting, on one
machine. Cases are matched by what they measure (layer: model, precision, isa, M, threads; kernel:
kernel, gemm, mode, rows, threads). A cell lists every round's value (sorted) and the ratio of the
medians, after / before: time for layer lines (ms_median, lower is better), GFLOPS (GOPS) in cache
and weight GB/s streaming and decoding for kernel lines (higher is better). The fraction beside it is the run's
own: frac_of_roofline (layer), frac_of_peak (kernel in cache) or GB/s over the round's probe
(kernel streaming), so rounds whose bandwidth drifted can be told apart. Where a shared machine's
bandwidth jumps between levels (a Zen 5 VM's probe: ~45-52 or ~80-84 GB/s, switching every few
seconds), --split-probe GBS compares the lines measured below GBS and those at or above it apart
(lines with a probe: layer and streaming; the others stay as one row). Only the standard library.
"""
import argparse
import json
import statistics
import sys


def case_key(j):
    """What a line measures, so the two builds' lines of one case meet; None for other lines."""
    if j.get("bench") == "layer":
        return ("layer", j["model"], j["precision"], j["isa"], j["M"], j["threads"])
    if j.get("bench") == "kernel" and "mode" in j:
        return ("kernel", j["kernel"], j["gemm"], j["mode"], j.get("mr", 0), j["threads"])
    return None


def value_and_fraction(j):
    """The compared value and the run's own fraction of its ceiling (0 when it has none)."""
    if j["bench"] == "layer":
        return j["ms_median"], j.get("frac_of_roofline") or 0.0
    if j["mode"] in ("stream", "decode"):  # decode: the roof alone, no ceiling beside it
        gbs = j.get("weight_gbs") or 0.0
        return gbs, gbs / j["peak_gbs"] if j.get("peak_gbs") else 0.0
    return j.get("gflops") or 0.0, j.get("frac_of_peak") or 0.0


def probe_level(j, split):
    """None, or whether the line's probe (peak_gbs) reached `split` GB/s: its rounds' row."""
    if not split or not j.get("peak_gbs") or (j["bench"] == "kernel" and j["mode"] != "stream"):
        return None
    return j["peak_gbs"] >= split


def read_rounds(paths, split=None):
    """{case + (probe level,): [(value, fraction), ...]}, one entry per line, in file order."""
    cases = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                if not line.startswith("{"):
                    continue
                j = json.loads(line)
                key = case_key(j)
                if key is not None:
                    cases.setdefault(key + (probe_level(j, split),), []).append(value_and_fraction(j))
    return cases


def cell(rounds):
    values = " / ".join(f"{v:.3g}" for v, _ in sorted(rounds))
    fracs = sorted(f for _, f in rounds)
    return values + (f" ({fracs[0]:.2f}–{fracs[-1]:.2f})" if fracs[-1] > 0 else "")


def table(before, after, split=None):
    """Markdown lines: one row per case (and probe level) measured on both sides, in a stable order."""
    rows = ["| case | unit | before | after | after / before |", "|---|---|---|---|---|"]
    for key in sorted(set(before) & set(after), key=lambda k: tuple(str(x) for x in k)):
        b, a = before[key], after[key]
        mb, ma = statistics.median(v for v, _ in b), statistics.median(v for v, _ in a)
        if key[0] == "layer":
            name, unit = f"{key[2]} M = {key[4]} ({key[1]}, {key[3]}, {key[5]}t)", "ms"
        else:
            rows_of = f" {key[4]} rows" if key[3] != "decode" else ""
            name = f"{key[1]} {key[2]} {key[3]}{rows_of} ({key[5]}t)"
            unit = "GB/s" if key[3] in ("stream", "decode") else "GFLOPS"
        if key[-1] is not None:
            name += f", probe {'≥' if key[-1] else '<'} {split:g} GB/s"
        ratio = f"{ma / mb:.2f}" if mb > 0 else "–"
        rows.append(f"| {name} | {unit} | {cell(b)} | {cell(a)} | {ratio} |")
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", nargs="+", required=True, help="JSON lines of the old build, one file per round")
    ap.add_argument("--after", nargs="+", required=True, help="JSON lines of the new build, one file per round")
    ap.add_argument("--split-probe", type=float, metavar="GBS",
                    help="compare the lines whose probe was below GBS GB/s and those at or above it apart")
    args = ap.parse_args(argv)
    before, after = read_rounds(args.before, args.split_probe), read_rounds(args.after, args.split_probe)
    rows = table(before, after, args.split_probe)
    if len(rows) == 2:
        print("no case was measured by both sides", file=sys.stderr)
        return 1
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
