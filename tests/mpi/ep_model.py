#!/usr/bin/env python3
"""The multi-host model on paper of docs/parallel.md ("Multi-host model"): bytes sent per token per MoE layer
in each of moe_ep's modes for 2-8 hosts, against 25/100/400 Gb/s links and the hosts' memory bandwidth.

  allreduce  every host holds all M tokens; the f32 partials [M, K] are reduce-scattered by token block
             and all-gathered: each host sends 2 (P-1)/P * 4K bytes per token of the step.
  alltoall   a token goes to the R hosts other than its owner that hold one of its k experts: x row in
             bf16 plus k ids and weights (2K + 8k bytes) out, the f32 partial row (4K) back. Uniform
             routing, E/P experts per host: a given other host holds none of the token's k experts with
             probability C(E - E/P, k) / C(E, k), so R = (P - 1) (1 - that). Per host: the total / P.
  weights    a step of M tokens reads, per host, its experts that some token hits, each once:
             about (E/P) (1 - (1 - k/E)^M) experts of 3 N K weights; compute 2 * 3 N K flops per slot,
             M k / P slots per host.
Usage: python3 tests/mpi/ep_model.py  (prints markdown tables)."""
from math import comb

MODELS = [  # name, E, K, N, k, bytes per weight (deepseek-v3: fp8 + 128x128 f32 block scales)
    ("DeepSeek-V3 (fp8)", 256, 7168, 2048, 8, 1 + 4 / 16384),
    ("Qwen3-30B-A3B (bf16)", 128, 2048, 768, 8, 2),
]
LINKS_GBIT = [25, 100, 400]
MEM_GBS = 400  # a host's memory read bandwidth, GB/s (a 12-channel DDR5 socket reaches about this)
TFLOPS = 10  # a host's sustained bf16 dot-product rate (this 2-core VM: ~1.07 peak, so ~0.5 per core)


def per_token(E, K, k, P):
    """(remote hosts per token, alltoall bytes/token/host, allreduce bytes/token/host)"""
    q = comb(E - E // P, k) / comb(E, k)
    R = (P - 1) * (1 - q)
    a2a = R * (2 * K + 8 * k + 4 * K) / P
    ar = 2 * (P - 1) / P * 4 * K
    return R, a2a, ar


def main():
    for name, E, K, N, k, bpw in MODELS:
        expert = 3 * N * K * bpw
        print(f"\n{name}: E {E}, K {K}, N {N}, top-{k}; one expert {expert / 1e6:.1f} MB\n")
        print("| hosts | remote hosts/token | alltoall KB/token/host | allreduce KB/token/host | "
              + " | ".join(f"µs/token/host @ {g} Gb/s (a2a / ar)" for g in LINKS_GBIT) + " |")
        print("|---" * (4 + len(LINKS_GBIT)) + "|")
        for P in (2, 4, 8):
            R, a2a, ar = per_token(E, K, k, P)
            t = [f"{a2a / (g / 8 * 1e3):.2f} / {ar / (g / 8 * 1e3):.2f}" for g in LINKS_GBIT]
            print(f"| {P} | {R:.2f} | {a2a / 1e3:.1f} | {ar / 1e3:.1f} | " + " | ".join(t) + " |")
        print(f"\nA step of M tokens, per host: weights read at {MEM_GBS} GB/s, GEMMs at {TFLOPS} TFLOP/s, "
              "link time at 100 Gb/s (alltoall / allreduce), ms\n")
        print("| hosts | M | experts read/host | weights ms | compute ms | link ms a2a | link ms ar |")
        print("|---|---|---|---|---|---|---|")
        for P in (2, 4, 8):
            for M in (1, 32, 512):
                R, a2a, ar = per_token(E, K, k, P)
                hit = E / P * (1 - (1 - k / E) ** M)
                w_ms = hit * expert / (MEM_GBS * 1e9) * 1e3
                link = 100 / 8 * 1e9
                c_ms = 2 * 3 * N * K * M * k / P / (TFLOPS * 1e12) * 1e3
                print(f"| {P} | {M} | {hit:.1f} | {w_ms:.3f} | {c_ms:.3f} | {M * a2a / link * 1e3:.3f} | "
                      f"{M * ar / link * 1e3:.3f} |")


if __name__ == "__main__":
    main()
