#!/usr/bin/env python3
"""bench/compare.py on made-up rounds: cases meet by what they measure, a cell lists every round,
the ratio is of the medians, a case only one side measured is left out, no common case is an
error, and --split-probe compares the rounds below and above a probe level apart. Plain asserts
(no pytest): run by Meson as `bench_compare`."""
import contextlib
import io
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import compare  # noqa: E402


def layer(M, ms, frac, precision="bf16", probe=None):
    j = {"bench": "layer", "model": "qwen3-30b-a3b", "precision": precision, "isa": "avx512", "M": M,
         "threads": 2, "ms_median": ms, "frac_of_roofline": frac}
    if probe:
        j["peak_gbs"] = probe
    return j


def stream(gbs, probe):
    return {"bench": "kernel", "kernel": "k_avx512", "gemm": "gemm1", "mode": "stream", "mr": 1, "threads": 2,
            "weight_gbs": gbs, "peak_gbs": probe}


def decode(gbs):
    return {"bench": "kernel", "kernel": "k_amx", "gemm": "gemm2", "mode": "decode", "threads": 2, "weight_gbs": gbs}


def write(dirname, name, lines):
    path = os.path.join(dirname, name)
    with open(path, "w") as f:
        f.write("a table line that is not JSON\n")
        f.writelines(json.dumps(j) + "\n" for j in lines)
    return path


def run(before, after, *extra):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = compare.main(["--before", *before, "--after", *after, *extra])
    return status, out.getvalue().splitlines(), err.getvalue()


def main():
    with tempfile.TemporaryDirectory() as d:
        before = [write(d, "b1", [layer(1, 2.0, 0.5), layer(32, 10.0, 0.8), stream(30.0, 40.0)]),
                  write(d, "b2", [layer(1, 4.0, 0.25), layer(32, 12.0, 0.7), stream(20.0, 40.0)]),
                  write(d, "b3", [layer(1, 3.0, 0.33), layer(32, 11.0, 0.75), stream(25.0, 50.0)])]
        before += [write(d, "b4", [decode(50.0)])]
        after = [write(d, "a1", [layer(1, 1.5, 0.66), stream(36.0, 40.0), layer(8, 5.0, 0.9), decode(60.0)]),
                 write(d, "a2", [layer(1, 1.4, 0.7), stream(40.0, 40.0)])]
        status, rows, _ = run(before, after)
        assert status == 0, status
        assert rows[0].startswith("| case |") and rows[1].startswith("|---"), rows[:2]
        body = {r.split(" | ")[0]: r for r in rows[2:]}
        assert len(body) == 3, rows  # M = 32 and M = 8 each measured on one side only
        m1 = body["| bf16 M = 1 (qwen3-30b-a3b, avx512, 2t)"]
        assert "| ms | 2 / 3 / 4 (0.25–0.50) | 1.4 / 1.5 (0.66–0.70) |" in m1, m1
        assert m1.endswith("| 0.48 |"), m1  # median 1.45 over median 3
        s = body["| k_avx512 gemm1 stream 1 rows (2t)"]
        assert "| GB/s | 20 / 25 / 30 (0.50–0.75) | 36 / 40 (0.90–1.00) | 1.52 |" in s, s
        dec = body["| k_amx gemm2 decode (2t)"]  # no mr, no ceiling: no fraction
        assert dec.endswith("| GB/s | 50 | 60 | 1.20 |"), dec

        status, rows, err = run(before[:1], [write(d, "other", [layer(64, 1.0, 0.5)])])
        assert status == 1 and rows == [] and "no case" in err, (status, rows, err)

        # a machine whose probe jumps between ~50 and ~80 GB/s: each level's rounds meet their own
        before = [write(d, "p1", [layer(1, 5.0, 0.8, probe=50.0), stream(30.0, 50.0), decode(50.0)]),
                  write(d, "p2", [layer(1, 3.0, 0.6, probe=80.0), stream(40.0, 80.0)])]
        after = [write(d, "q1", [layer(1, 2.7, 0.65, probe=82.0), stream(44.0, 80.0), decode(55.0)]),
                 write(d, "q2", [layer(1, 4.5, 0.9, probe=48.0)]), write(d, "q3", [layer(1, 2.4, 0.7, probe=79.0)])]
        status, rows, _ = run(before, after, "--split-probe", "65")
        assert status == 0, status
        body = {r.split(" | ")[0]: r for r in rows[2:]}
        assert len(body) == 4, rows  # the stream below 65 GB/s was measured before only
        low = body["| bf16 M = 1 (qwen3-30b-a3b, avx512, 2t), probe < 65 GB/s"]
        assert "| ms | 5 (0.80–0.80) | 4.5 (0.90–0.90) | 0.90 |" in low, low
        high = body["| bf16 M = 1 (qwen3-30b-a3b, avx512, 2t), probe ≥ 65 GB/s"]
        assert "| ms | 3 (0.60–0.60) | 2.4 / 2.7 (0.65–0.70) | 0.85 |" in high, high
        assert body["| k_avx512 gemm1 stream 1 rows (2t), probe ≥ 65 GB/s"].endswith("| 1.10 |"), body
        assert body["| k_amx gemm2 decode (2t)"].endswith("| GB/s | 50 | 55 | 1.10 |"), body  # no probe: one row
    print("bench_compare: ok")


if __name__ == "__main__":
    main()
