#!/usr/bin/env python3
"""Roofline of bench JSON lines (bench_layer and bench_kernels output) as a PNG.

    python3 bench/roofline.py bench/results-zen4-2t.jsonl -o bench/roofline-zen4-2t.png

x: flops (ops for int8) per byte of weights read (packed, scales included); y: GFLOPS (GOPS).
Ceilings from the lines themselves: the read-bandwidth slope at the median peak_gbs, one flat roof
per instruction peak (layer lines: roofline_peak / roofline_gflops, the peak of the instruction the
kernel uses, vfmadd231ps for scalar kernels; older lines and kernel lines: dot / peak_gflops), and
a dotted slope per low-bit precision at its decode roof (decode_gbs of layer lines, else bench_kernels'
decode lines: the AMX tier's B staging alone, in cache).
Layer points per precision, labelled with M and frac_of_roofline; the peer's points (same work,
its time) hollow; bench_kernels' streaming points (one row) as diamonds and its in-cache points
(weights in L2: no DRAM intensity) as triangles on the right edge. Needs matplotlib
(Debian: apt-get install python3-matplotlib).
"""
import argparse
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"int8": "tab:blue", "bf16": "tab:orange", "fp16": "tab:olive", "fp8": "tab:green",
          "int4-w4a8": "tab:purple", "int4-w4a16": "tab:brown", "mxfp4": "tab:pink"}
# The dot-product instruction a layer of each precision is compared with (bench_ceilings.c).
DOT_OF = {"int8": "vpdpbusd", "int4-w4a8": "vpdpbusd"}


def read_lines(paths):
    """Every JSON object of the files (or stdin), skipped and malformed lines left out."""
    rows = []
    for path in paths or ["-"]:
        f = sys.stdin if path == "-" else open(path, encoding="utf-8")
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not row.get("skipped"):
                rows.append(row)
    return rows


def ceilings(rows):
    """(median read GB/s, {dot instruction: median peak})."""
    gbs = [r["peak_gbs"] for r in rows if r.get("peak_gbs")]
    peaks = {}
    for r in rows:
        if r.get("bench") == "layer" and "roofline_peak" in r:  # the roof of the kernel's instruction
            if r.get("roofline_gflops"):
                peaks.setdefault(r["roofline_peak"], []).append(r["roofline_gflops"])
            continue
        if not r.get("peak_gflops"):
            continue
        dot = r.get("dot") or DOT_OF.get(r.get("precision"), "vdpbf16ps")
        peaks.setdefault(dot, []).append(r["peak_gflops"])
    return (statistics.median(gbs) if gbs else None), {d: statistics.median(v) for d, v in peaks.items()}


def decode_roofs(rows):
    """{precision: median GB/s of its decode roof}: layer lines' decode_gbs, else the kernel decode
    lines' of the largest thread count."""
    layer, kern = {}, {}
    for r in rows:
        if r.get("bench") == "layer" and r.get("decode_gbs"):
            layer.setdefault(r["precision"], []).append(r["decode_gbs"])
        elif r.get("bench") == "kernel" and r.get("mode") == "decode" and r.get("weight_gbs"):
            kern.setdefault(r["precision"], []).append((r.get("threads", 1), r["weight_gbs"]))
    for p, v in kern.items():
        most = max(t for t, _ in v)
        kern[p] = [g for t, g in v if t == most]
    return {p: statistics.median(v) for p, v in {**kern, **layer}.items()}


def intensity(r):
    return r["gflops"] / r["weight_gbs"] if r.get("gflops") and r.get("weight_gbs") else None


def plot_ceilings(ax, bw, peaks, xlim):
    top = max(peaks.values()) if peaks else None
    if bw:  # the slope up to the highest roof
        end = top / bw if top else xlim[1]
        ax.plot([xlim[0], end], [bw * xlim[0], bw * end], color="black", lw=1.5,
                label=f"read bandwidth {bw:.1f} GB/s (probe, median)")
    for dot, peak in sorted(peaks.items(), key=lambda kv: -kv[1]):
        start = peak / bw if bw else xlim[0]
        ax.plot([start, xlim[1]], [peak, peak], ls="--", lw=1.2, color="gray")
        unit = "GOPS" if dot == "vpdpbusd" else "GFLOPS"
        ax.annotate(f"{dot} peak {peak:.0f} {unit}", (xlim[0] * 1.1, peak), va="bottom", fontsize=8,
                    color="dimgray")


def plot_decode_roofs(ax, roofs, peaks, xlim):
    """A slope like the bandwidth's per precision: weights decoded per second x flops per byte."""
    top = max(peaks.values()) if peaks else None
    for p, gbs in sorted(roofs.items()):
        end = top / gbs if top else xlim[1]
        ax.plot([xlim[0], end], [gbs * xlim[0], gbs * end], ls=":", lw=1.2, color=COLORS.get(p, "black"),
                label=f"decode roof {p} {gbs:.0f} GB/s (in cache)")


def plot_layers(ax, rows):
    """Our points and the peer's; returns the precisions now in the legend."""
    seen = set()
    for r in rows:
        x = intensity(r)
        if r.get("bench") != "layer" or x is None:
            continue
        p = r["precision"]
        c = COLORS.get(p, "black")
        ax.plot([x], [r["gflops"]], "o", color=c, ms=7, label=None if p in seen else f"moe.h {p}")
        text = f"M={r['M']}"
        if r.get("frac_of_roofline") is not None:
            text += f" {100 * r['frac_of_roofline']:.2g}%"
        ax.annotate(text, (x, r["gflops"]), textcoords="offset points", xytext=(6, -3), fontsize=7)
        if r.get("vs") not in (None, "none") and r.get("onednn_ms_median"):
            y = r["gflops"] * r["ms_median"] / r["onednn_ms_median"]
            weights = f", {r['peer_weights']} weights" if r.get("peer_weights") not in (None, p) else ""
            ax.plot([x], [y], "o", mfc="none", color=c, ms=7,
                    label=None if p in seen else f"{r['vs']} {p} (same work{weights})")
        seen.add(p)
    return seen


def plot_kernels(ax, rows, xlim, scalar, in_legend):
    shown = set()
    for r in rows:
        if r.get("bench") != "kernel" or (r.get("isa") == "scalar" and not scalar):
            continue
        c = COLORS.get(r.get("precision"), "black")
        name = f"{r['gemm']} {r['isa']} {r['precision']}"
        if r.get("precision") not in in_legend:
            ax.plot([], [], "s", color=c, label=r.get("precision"))
            in_legend.add(r.get("precision"))
        if r.get("mode") == "stream" and intensity(r):
            ax.plot([intensity(r)], [r["gflops"]], "D", color=c, ms=5)
            ax.annotate(name, (intensity(r), r["gflops"]), textcoords="offset points", xytext=(5, 3), fontsize=6)
            shown.add("stream")
        elif r.get("mode") == "cache" and r.get("gflops"):
            ax.plot([xlim[1]], [r["gflops"]], "<", color=c, ms=7, clip_on=False)
            ax.annotate(name, (xlim[1], r["gflops"]), textcoords="offset points", xytext=(-8, 3), ha="right",
                        fontsize=6)
            shown.add("cache")
    # legend entries in gray: the colour is the precision's
    if "stream" in shown:
        ax.plot([], [], "D", color="gray", ms=5, label="kernel, 1 row streaming")
    if "cache" in shown:
        ax.plot([], [], "<", color="gray", ms=7, label="kernel in cache (L2), full tiles (right edge)")


def title_of(rows):
    layer = next((r for r in rows if r.get("bench") == "layer"), None)
    if layer:
        return "{} (K {}, N {}, E {}, top-{}), {} threads".format(
            layer["model"], layer["K"], layer["N"], layer["E"], layer["topk"], layer["threads"])
    k = rows[0]
    kred = sorted({(r.get("gemm"), r.get("kred")) for r in rows if r.get("kred")})
    return "kernels, {} ({}), {} threads".format(
        k.get("model", "?"), ", ".join(f"{g} k {n}" for g, n in kred), k.get("threads", "?"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="JSON-lines files (default: stdin)")
    ap.add_argument("-o", "--output", default="roofline.png")
    ap.add_argument("--title", default=None)
    ap.add_argument("--scalar", action="store_true", help="also plot the scalar kernels")
    args = ap.parse_args()
    rows = read_lines(args.files)
    if not rows:
        sys.exit("roofline.py: no bench JSON lines")
    bw, peaks = ceilings(rows)
    xs = [intensity(r) for r in rows if intensity(r)]
    xlim = (min(xs + [1.0]) / 2, max(xs + [(max(peaks.values()) / bw) if bw and peaks else 1.0]) * 4)
    fig, ax = plt.subplots(figsize=(12, 6), dpi=120)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    plot_ceilings(ax, bw, peaks, xlim)
    plot_decode_roofs(ax, decode_roofs(rows), peaks, xlim)
    plot_kernels(ax, rows, xlim, args.scalar, plot_layers(ax, rows))
    title = args.title or title_of(rows)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("flops (int8: ops) per byte of weights read")
    ax.set_ylabel("GFLOPS (int8: GOPS)")
    ax.grid(True, which="both", ls=":", lw=0.5)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: no point hidden
    fig.tight_layout()
    fig.savefig(args.output)
    print(f"roofline.py: wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
