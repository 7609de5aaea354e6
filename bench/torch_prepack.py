#!/usr/bin/env python3
"""The two PyTorch prepacks against each other (docs/python.md, "Two prepacks"): the time of
convert_weight_packed (one tensor) and of convert_weight_packed_moe (the pair), the first is_vnni=True
call (which packs one-tensor weights), the bytes held, and the call time afterwards. One JSON line.

MOEH_TORCH_LIB=build/torch/moeh_torch.so MOEH_LIBMOE=build/libmoe.so PYTHONPATH=python \\
  /usr/bin/python3 bench/torch_prepack.py [--experts 32 --m 32 --threads 2]
"""
import argparse
import json
import time

import torch

import moeh.sgl_kernel  # noqa: F401  torch.ops.sgl_kernel -> torch.ops.moeh

ap = argparse.ArgumentParser()
ap.add_argument("--experts", type=int, default=32)
ap.add_argument("--n", type=int, default=768)
ap.add_argument("--k", type=int, default=2048)
ap.add_argument("--m", type=int, default=32)
ap.add_argument("--topk", type=int, default=8)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--runs", type=int, default=20)
o = ap.parse_args()
torch.set_num_threads(o.threads)
k = torch.ops.sgl_kernel
E, N, K = o.experts, o.n, o.k
w1 = (torch.randn(E, 2 * N, K) / K ** 0.5).bfloat16()
w2 = (torch.randn(E, K, N) / N ** 0.5).bfloat16()
x = torch.randn(o.m, K).bfloat16()
tw, ti = k.topk_softmax_cpu(x, torch.randn(o.m, E), o.topk, True)


def call(a, b):
    return k.fused_experts_cpu(x, a, b, tw, ti, False, False, False, None, None, None, None, None, True)


def seconds(fn):
    t = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t


(p1, p2), two_s = seconds(lambda: k.convert_weight_packed_moe(w1, w2))
(o1, o2), one_s = seconds(lambda: (k.convert_weight_packed(w1), k.convert_weight_packed(w2)))
_, first_s = seconds(lambda: call(o1, o2))


def per_call(a, b):
    call(a, b)
    return min(seconds(lambda: [call(a, b) for _ in range(o.runs)])[1] / o.runs for _ in range(3))


print(json.dumps({
    "bench": "torch_prepack", "precision": "bf16", "E": E, "N": N, "K": K, "M": o.m, "threads": o.threads,
    "src_mb": 2 * (w1.numel() + w2.numel()) / 1e6,
    "two_tensor_prepack_ms": two_s * 1e3, "one_tensor_prepack_ms": one_s * 1e3, "first_call_ms": first_s * 1e3,
    "two_tensor_mb": (p1.numel() + p2.numel()) / 1e6, "one_tensor_mb_after_first_call": (o1.numel() + o2.numel()) / 1e6,
    "call_ms_two_tensor": per_call(p1, p2) * 1e3, "call_ms_one_tensor": per_call(o1, o2) * 1e3,
    "same_bits": bool(torch.equal(call(p1, p2), call(o1, o2))),
}))
