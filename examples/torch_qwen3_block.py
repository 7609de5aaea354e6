#!/usr/bin/python3
"""A Qwen3-MoE-style sparse MoE block in plain PyTorch (bf16, the loop over experts that Hugging Face
transformers' Qwen3MoeSparseMoeBlock runs), then the same block with torch.ops.moeh swapped in:
topk_softmax_cpu for the routing and fused_experts_cpu on weights prepacked once with
convert_weight_packed_moe. Prints the time per block call of each, the speedup and the difference.

    MOEH_TORCH_LIB=build/torch/moeh_torch.so PYTHONPATH=python /usr/bin/python3 examples/torch_qwen3_block.py
    ... --quick            (smaller layer, M in {1, 32}: a few seconds)
    ... --experts 128 --threads 16 --m 1 32 128 512

Qwen3-30B-A3B's layer is hidden 2048, expert intermediate 768, 128 experts, top-8 (renormalized);
the default here is 64 experts to keep memory and load time small (the time per call hardly depends
on E at small M: only the experts hit are read).
"""

import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    import moeh.torch  # noqa: F401  (registers torch.ops.moeh)
except Exception:  # noqa: BLE001  the moeh package (numpy, libmoe) failed to import
    lib = os.environ.get("MOEH_TORCH_LIB")
    if not lib:
        raise
    torch.ops.load_library(lib)  # the moeh package could not be imported: load the operators alone


class Qwen3MoeMLP(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Qwen3MoeSparseMoeBlock(nn.Module):
    """As transformers' modeling_qwen3_moe: router linear, softmax in f32, top-k, renormalize, loop over experts."""

    def __init__(self, hidden, inter, n_experts, top_k, norm_topk_prob=True):
        super().__init__()
        self.num_experts, self.top_k, self.norm_topk_prob = n_experts, top_k, norm_topk_prob
        self.gate = nn.Linear(hidden, n_experts, bias=False)
        self.experts = nn.ModuleList([Qwen3MoeMLP(hidden, inter) for _ in range(n_experts)])

    def forward(self, hidden_states):
        routing_weights = F.softmax(self.gate(hidden_states), dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for e in torch.nonzero(expert_mask.sum(dim=(-1, -2)) > 0).flatten().tolist():  # the experts hit
            idx, top_x = torch.where(expert_mask[e])
            y = self.experts[e](hidden_states[top_x]) * routing_weights[top_x, idx, None]
            final.index_add_(0, top_x, y.to(hidden_states.dtype))
        return final


class MoehSparseMoeBlock(nn.Module):
    """The same block on torch.ops.moeh: weights packed once (W13 = [gate; up] rows, W2 = down)."""

    def __init__(self, block):
        super().__init__()
        self.top_k, self.norm_topk_prob, self.gate = block.top_k, block.norm_topk_prob, block.gate
        w13 = torch.stack([torch.cat([m.gate_proj.weight, m.up_proj.weight]) for m in block.experts])  # [E, 2N, K]
        w2 = torch.stack([m.down_proj.weight for m in block.experts])  # [E, K, N]
        self.w13, self.w2 = torch.ops.moeh.convert_weight_packed_moe(w13.detach(), w2.detach(), 0)

    def forward(self, hidden_states):
        tw, ti = torch.ops.moeh.topk_softmax_cpu(hidden_states, self.gate(hidden_states), self.top_k,
                                                 self.norm_topk_prob)
        return torch.ops.moeh.fused_experts_cpu(hidden_states, self.w13, self.w2, tw, ti, False, False, False, None,
                                                None, None, None, None, True)


def per_call(fn, x, min_time, max_reps):
    fn(x)  # warm up
    reps, t0 = 0, time.perf_counter()
    while True:
        fn(x)
        reps += 1
        t = time.perf_counter() - t0
        if t >= min_time or reps >= max_reps:
            return t / reps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smaller layer (16 experts, 1024 x 384), M in {1, 32}")
    ap.add_argument("--experts", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--inter", type=int, default=768)
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--m", type=int, nargs="+", default=[1, 32, 128])
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads (both paths)")
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds of timed calls per measurement")
    args = ap.parse_args()
    if args.quick:
        args.experts, args.hidden, args.inter, args.m, args.min_time = 16, 1024, 384, [1, 32], 0.3
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    print(f"CPU: {cpu}; torch {torch.__version__}, {torch.get_num_threads()} threads; {torch.ops.moeh.info()}")
    print(f"layer: {args.experts} experts, hidden {args.hidden}, expert intermediate {args.inter}, "
          f"top-{args.topk} (renormalized), bf16")
    with torch.no_grad():
        t0 = time.perf_counter()
        block = Qwen3MoeSparseMoeBlock(args.hidden, args.inter, args.experts, args.topk)
        for p in block.parameters():
            nn.init.normal_(p, std=0.02)
        block = block.to(torch.bfloat16).eval()
        t1 = time.perf_counter()
        fast = MoehSparseMoeBlock(block)
        t2 = time.perf_counter()
        print(f"init {t1 - t0:.1f} s, prepack (convert_weight_packed_moe) {t2 - t1:.1f} s\n")
        print(f"{'M':>5} {'plain PyTorch':>14} {'torch.ops.moeh':>15} {'speedup':>8} {'max rel diff':>13} "
              f"{'rel L2':>9} {'routed apart':>12}")
        for M in args.m:
            x = torch.randn(M, args.hidden).to(torch.bfloat16)
            ref, out = block(x).double(), fast(x).double()
            # Tokens whose top-k sets differ: bf16 router logits tie now and then, and torch.topk and
            # moe_route break ties differently (moe_route: the lower expert id). Compared apart.
            logits = block.gate(x)
            ref_ids = torch.topk(F.softmax(logits, dim=1, dtype=torch.float), args.topk).indices.sort(-1).values
            ids = torch.ops.moeh.topk_softmax_cpu(x, logits, args.topk, True)[1].long().sort(-1).values
            same = (ref_ids == ids).all(-1)
            diff = (out - ref)[same].abs().max().item() / ref.abs().max().item()
            l2 = ((out - ref)[same].norm() / ref[same].norm()).item()
            t_ref = per_call(block, x, args.min_time, 200)
            t_moe = per_call(fast, x, args.min_time, 2000)
            print(f"{M:>5} {t_ref * 1e3:>11.2f} ms {t_moe * 1e3:>12.2f} ms {t_ref / t_moe:>7.1f}x {diff:>13.2e} "
                  f"{l2:>9.2e} {int((~same).sum()):>5} of {M:<4}")
    print("\nmax rel diff: max |moeh - plain| / max |plain| and rel L2 = ||moeh - plain|| / ||plain||, over the tokens")
    print("routed alike (both bf16; the plain block rounds every Linear's output to bf16, moeh keeps f32 sums")
    print("and rounds h and the output once). routed apart: tokens whose bf16 router logits tie at the top-k")
    print("boundary, where torch.topk and moe_route (ties to the lower expert id) choose different experts.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
