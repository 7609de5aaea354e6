"""``import moeh.sgl_kernel``: code written for SGLang's CPU MoE operators runs on moeh unchanged.

After this import, ``torch.ops.sgl_kernel.<op>`` and ``sgl_kernel.common_ops.<op>`` (``import
sgl_kernel`` too) resolve to ``torch.ops.moeh.<op>`` for every MoE operator moeh implements (the names in
``IMPLEMENTED``). Any other name raises an ``AttributeError`` that says moeh does not implement it, so
a missing operator is reported where it is used, never silently replaced. An ``sgl_kernel`` that was
already imported is replaced, with a warning.

    import moeh.sgl_kernel  # the one line an engine adds
    packed_w1 = torch.ops.sgl_kernel.convert_weight_packed(w1)
    packed_w2 = torch.ops.sgl_kernel.convert_weight_packed(w2)
    out = torch.ops.sgl_kernel.fused_experts_cpu(x, packed_w1, packed_w2, topk_weights, topk_ids, False,
                                                 False, False, None, None, None, None, None, True)
"""

import sys
import types
import warnings

import torch

from . import torch as _moeh_torch  # registers torch.ops.moeh

__all__ = ["IMPLEMENTED", "ops"]

# The MoE operators of SGLang's sgl_kernel (csrc/cpu) that moeh implements, plus moeh's own prepack
# helpers under their moeh names.
IMPLEMENTED = (
    "fused_experts_cpu",
    "shared_expert_cpu",
    "convert_weight_packed",
    "topk_softmax_cpu",
    "topk_sigmoid_cpu",
    "grouped_topk_cpu",
    "biased_grouped_topk_cpu",
    "convert_weight_packed_moe",
    "packed_weight_info",
)


class _Namespace(types.ModuleType):
    """torch.ops.sgl_kernel and sgl_kernel.common_ops: moeh's operators under SGLang's names."""

    def __getattr__(self, name):
        if name in IMPLEMENTED:
            return getattr(_moeh_torch.ops, name)
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"sgl_kernel.{name}: moeh does not implement this operator (moeh.sgl_kernel provides only "
            f"the MoE operators: {', '.join(IMPLEMENTED)})"
        )

    def __dir__(self):
        return sorted(IMPLEMENTED)


ops = _Namespace("sgl_kernel.common_ops", "moeh's operators under SGLang's sgl_kernel names")


def _install():
    if "sgl_kernel" in sys.modules and not getattr(sys.modules["sgl_kernel"], "_moeh_switch", False):
        warnings.warn("moeh.sgl_kernel: replacing the sgl_kernel module already imported", RuntimeWarning)
    package = types.ModuleType("sgl_kernel", "moeh's stand-in for sgl_kernel (import moeh.sgl_kernel)")
    package._moeh_switch = True
    package.common_ops = ops
    sys.modules["sgl_kernel"] = package
    sys.modules["sgl_kernel.common_ops"] = ops
    setattr(torch.ops, "sgl_kernel", ops)  # torch.ops caches namespaces as attributes: this one wins


_install()
