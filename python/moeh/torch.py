"""PyTorch operators of moe.h: ``import moeh.torch`` registers them under ``torch.ops.moeh``.

The operators follow SGLang's CPU MoE operators (sgl-kernel ``csrc/cpu``): argument order, types and
semantics, so code written for ``torch.ops.sgl_kernel`` runs on ``torch.ops.moeh``:

- ``fused_experts_cpu`` (SGLang's 14-argument form: bf16/fp16, int8 W8A8, fp8 W8A16), and the
  ``moe_comp_method`` forms as overloads ``fused_experts_cpu.comp_method`` (17 or 18 arguments:
  zero points, biases, gpt-oss alpha/limit, activation) and ``fused_experts_cpu.comp_method_nobias``
  (13 arguments); ``torch.ops.moeh.fused_experts_cpu(...)`` picks the overload from the arguments.
- ``shared_expert_cpu`` (14 arguments) and ``shared_expert_cpu.opt`` (12 arguments).
- ``topk_softmax_cpu``, ``topk_sigmoid_cpu``, ``grouped_topk_cpu``, ``biased_grouped_topk_cpu``.
- ``convert_weight_packed(weight)`` (SGLang's one-tensor prepack; the pair is packed at its first
  ``is_vnni=True`` call, with that call's method and scales: see torch/moeh_torch.cpp) and
  ``convert_weight_packed_moe(w1, w2, moe_comp_method, w1_scale, w2_scale, w1_zero, w2_zero,
  block_size, gate_up_interleaved)`` -> ``(packed_w1, packed_w2)``: the weights for ``is_vnni=True``.
- ``import moeh.sgl_kernel`` makes ``torch.ops.sgl_kernel`` and ``sgl_kernel.common_ops`` these operators.
- ``packed_weight_info(packed)`` and ``info()``: descriptions.

PyTorch 1.13 has no float8 dtype: fp8 e4m3 weights are passed as ``torch.uint8`` (their bytes).
Threads come from PyTorch's intra-op pool: ``torch.set_num_threads`` governs them.

The shared library is looked for in ``$MOEH_TORCH_LIB`` first, then next to this file
(``moeh_torch.so``, where ``meson install`` puts it). This module needs only ``torch``: it does not use
the rest of the ``moeh`` package (libmoe, numpy).
"""

import enum
import glob
import os

import torch

__all__ = ["CPUQuantMethod", "ops", "library_path", "load", "prepack", "fused_experts", "shared_expert"]


class CPUQuantMethod(enum.IntEnum):
    """Values of ``moe_comp_method`` (SGLang's ``CPUQuantMethod``; INT4_W4A16 is a moeh extension)."""

    UNQUANT = 0
    INT8_W8A8 = 1
    FP8_W8A16 = 2
    INT4_W4A8 = 3
    MXFP4 = 4
    INT4_W4A16 = 5


def library_path():
    """The moeh_torch shared library this module loads: $MOEH_TORCH_LIB, else the one beside it."""
    env = os.environ.get("MOEH_TORCH_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ["moeh_torch.so"] + sorted(glob.glob(os.path.join(here, "moeh_torch*.so"))):
        path = os.path.join(here, name)
        if os.path.isfile(path):
            return path
    raise ImportError(
        "moeh.torch: moeh_torch.so not found (set MOEH_TORCH_LIB to the built module, or install it: "
        "meson builds it where /usr/bin/python3 imports torch)"
    )


_loaded = None


def load(path=None):
    """Loads the operators once (idempotent) and returns the path loaded."""
    global _loaded
    if _loaded is None:
        if _has_ops():  # registered already (loaded by hand with torch.ops.load_library)
            _loaded = path or "(already registered)"
        else:
            _loaded = path or library_path()
            torch.ops.load_library(_loaded)
    return _loaded


def _has_ops():
    try:
        torch.ops.moeh.fused_experts_cpu  # noqa: B018
        return True
    except (AttributeError, RuntimeError):
        return False


load()
ops = torch.ops.moeh


def prepack(w1, w2, method=CPUQuantMethod.UNQUANT, w1_scale=None, w2_scale=None, w1_zero=None, w2_zero=None,
            block_size=None, gate_up_interleaved=False):
    """Packs W13 [E, 2N, K] and W2 [E, K, N] (2-D for a shared expert) for ``is_vnni=True`` calls."""
    return ops.convert_weight_packed_moe(w1, w2, int(method), w1_scale, w2_scale, w1_zero, w2_zero,
                                         None if block_size is None else list(block_size), gate_up_interleaved)


def fused_experts(hidden_states, w1, w2, topk_weights, topk_ids, method=CPUQuantMethod.UNQUANT, *, inplace=False,
                  w1_scale=None, w2_scale=None, w1_zero=None, w2_zero=None, block_size=None, w1_bias=None,
                  w2_bias=None, alpha=None, limit=None, is_vnni=False, activation=None):
    """Keyword wrapper of ``fused_experts_cpu.comp_method``."""
    return ops.fused_experts_cpu.comp_method(
        hidden_states, w1, w2, topk_weights, topk_ids, inplace, int(method), w1_scale, w2_scale, w1_zero, w2_zero,
        None if block_size is None else list(block_size), w1_bias, w2_bias, alpha, limit, is_vnni, activation)


def shared_expert(hidden_states, w1, w2, fused_experts_out=None, routed_scaling_factor=None, *, inplace=False,
                  use_int8_w8a8=False, use_fp8_w8a16=False, w1_scale=None, w2_scale=None, block_size=None,
                  is_vnni=False):
    """Keyword wrapper of ``shared_expert_cpu.opt``: shared(x) (+ routed_scaling_factor * fused_experts_out)."""
    return ops.shared_expert_cpu.opt(
        hidden_states, w1, w2, fused_experts_out, routed_scaling_factor, inplace, use_int8_w8a8, use_fp8_w8a16,
        w1_scale, w2_scale, None if block_size is None else list(block_size), is_vnni)
