#!/usr/bin/env python3
"""A port model of the AVX-512 low-bit tiles' inner loops on a CPU that is not at hand (llvm-mca).

Compiles moe.c to assembly (release flags), takes each generated low-bit tile's main loop (the
loop with the most dot-product instructions, on its hot path: one k step) and runs llvm-mca on it
for the CPU asked for. Prints one JSON line per tile: the modelled cycles per loop iteration and
the instruction count. A model, not a measurement: it knows ports and latencies, not cache-line
splits, the memory system or the clock. The dense tiles (bf16, qc8) are left out: their loops
branch for their prefetch, and llvm-mca would run both sides of each branch.

  python3 bench/mca_tiles.py --tiles b4f,i4f --cpu sapphirerapids
  python3 bench/mca_tiles.py --tiles b4f --root /tmp/wb     # another checkout, e.g. a worktree of an earlier commit
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOWBIT = {"fp8", "q4", "b4", "i4", "b4f", "i4f"}  # the generated low-bit tile families (tools/gen_tiles.py)
DOT = re.compile(r"\s(vfmadd\w+|vdpbf16ps|vpdpbusds?|vpdpwssds?)\s")


def compile_asm(cc, root, out):
    subprocess.run([cc, "-I" + root, "-DNDEBUG", "-std=c11", "-O3", "-pthread", "-S", "-o", out,
                    os.path.join(root, "moe.c")], check=True)


def functions(lines):
    """name -> its lines, for every function of the assembly."""
    out, name = {}, None
    for line in lines:
        m = re.match(r"^([A-Za-z_]\w*):", line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name:
            out[name].append(line)
    return out


JUMP = re.compile(r"\s+(j\w+)\s+(\.L\w+)$")


def hot_path(seg):
    """The loop body [label, back jump] as it runs on most iterations, or None: a forward branch to a
    label inside the loop (the 1- and 2-row tiles' prefetch stream, whose jump into the next panels
    is added only at a panel's end: moe__ahead_at) is taken, so the instructions it skips leave the
    model; any other jump (out of the loop, or back inside it) makes the loop not modelled, as
    llvm-mca would run both sides of the branch."""
    labels = {m.group(1): i for i, x in enumerate(seg) if (m := re.match(r"^(\.L\w+):", x))}
    out, i = [], 1
    while i < len(seg) - 1:
        m = JUMP.match(seg[i])
        if m:
            if m.group(1) == "jmp" or labels.get(m.group(2), -1) <= i:
                return None
            i = labels[m.group(2)]
        elif re.match(r"\s+j\w+\s", seg[i]):
            return None
        else:
            out.append(seg[i])
        i += 1
    return out + [seg[-1]]


def main_loop(body):
    """The loop (a label, a jump back to it, forward branches inside at most: hot_path) with the most
    dot products: the instructions of its hot path. A loop with other branches inside (the dense
    tiles' prefetch) is not modelled."""
    loops = []
    for a, line in enumerate(body):
        m = re.match(r"^(\.L\w+):", line)
        if not m:
            continue
        for b in range(a + 1, len(body)):
            if re.match(r"\s+j\w+\s+" + re.escape(m.group(1)) + r"$", body[b]):
                loops.append(body[a:b + 1])
                break
    paths = [p for p in map(hot_path, loops) if p]
    best = max(paths, key=lambda p: sum(bool(DOT.search(x)) for x in p), default=None)
    if best is None or not any(DOT.search(x) for x in best):
        return []
    return [x for x in best if x.strip() and not x.strip().startswith((".", "#")) and not re.match(r"^\.L", x)]


def model(cpu, loop, iterations=200):
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(loop) + "\n")
    try:
        out = subprocess.run(["llvm-mca", f"-mcpu={cpu}", f"-iterations={iterations}", f.name],
                             check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    cycles = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1))
    return cycles / iterations


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", default="sapphirerapids", help="llvm-mca's -mcpu (default sapphirerapids)")
    ap.add_argument("--tiles", default="b4f,i4f", help="tile families, comma-separated (moe__<family>_..._tile_<rows>)")
    ap.add_argument("--asm", help="read this assembly instead of compiling moe.c")
    ap.add_argument("--keep", help="write the assembly compiled here to this file")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--root", default=ROOT, help="the checkout whose moe.c to compile (default: this one)")
    args = ap.parse_args()
    if args.asm:
        text = open(args.asm).read()
    else:
        path = args.keep or tempfile.mktemp(suffix=".s")
        compile_asm(args.cc, args.root, path)
        text = open(path).read()
        if not args.keep:
            os.unlink(path)
    fns = functions(text.split("\n"))
    fams = args.tiles.split(",")
    if not set(fams) <= LOWBIT:
        sys.exit(f"--tiles: low-bit families only ({', '.join(sorted(LOWBIT))})")
    found = 0
    for name in sorted(fns):
        m = re.match(r"moe__(\w+?)_(\w+)_tile_(\d+)$", name)
        if not m or m.group(1) not in fams:
            continue
        loop = main_loop(fns[name])
        if not loop:
            continue
        found += 1
        dots = sum(bool(DOT.search(x)) for x in loop)
        print(json.dumps({"bench": "mca", "cpu": args.cpu, "tile": name, "rows": int(m.group(3)),
                          "instructions": len(loop), "dot_products": dots,
                          "cycles_per_iteration": round(model(args.cpu, loop), 2)}))
    if not found:
        sys.exit(f"no tile of {args.tiles} found")


if __name__ == "__main__":
    main()
