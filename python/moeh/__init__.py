"""moeh: fused Mixture-of-Experts layers for x86 CPUs (libmoe, the C library of moe.h) on numpy arrays.

    import numpy as np, moeh
    q13, s13 = moeh.quantize_weight_int8(w13_f32)          # [E, 2N, K] gate rows first
    q2, s2 = moeh.quantize_weight_int8(w2_f32)             # [E, K, N]
    ex = moeh.Experts("int8", q13, q2, w13_scale=s13, w2_scale=s2)   # packed once
    w, ids = moeh.route(logits, topk=8, renormalize=True)  # logits [M, E] float32
    out = ex(x, w, ids)                                    # x [M, K] float32 / float16 / bf16 bits
    out = moeh.forward(ex, moeh.Router(E, 8, renormalize=True), logits, x)

Activations, outputs and logits: float32, float16, or bfloat16 held as uint16 bit patterns (the
`dtype` argument says "bf16" or "fp16" for uint16 arrays; bf16 is the default); ml_dtypes.bfloat16
arrays too when ml_dtypes is installed. Every error of the library raises MoeError (status, name,
message); bad shapes and dtypes raise ValueError / TypeError before the library is called. The
workspace is allocated inside and cached per Experts object (one per Python thread). Threads:
`threads=None` lets libmoe use OpenMP (all of OMP_NUM_THREADS) when it was built with it, else the
call is serial; `threads=n` asks for n OpenMP threads. The result does not depend on the count.

libmoe is found through $MOEH_LIBMOE (a path to libmoe.so), else the library `meson install` put
beside this package, else the loader's search path (ctypes.util.find_library("moe")).
"""

import ctypes
import enum
import math
import threading

import numpy as np

from . import _lib

_L, _LIB_PATH = _lib.load()

__all__ = [
    "version", "library_path", "Status", "MoeError", "Precision", "Activation", "RouteKind", "DType", "Isa",
    "quantize_weight_int8", "quantize_weight_fp8", "quantize_weight_int4", "quantize_weight_mxfp4",
    "quantize_row_u8", "to_bf16", "from_bf16",
    "import_fp8_block", "import_awq", "import_gptq", "import_mxfp4", "import_bias", "deinterleave_gate_up",
    "expert_map_contiguous",
    "Experts", "Router", "route", "fused_experts", "shared_expert", "forward",
    "set_isa", "get_isa", "isa_available", "kernel", "cpu_features", "precision_compiled",
]


def version():
    """The version of the libmoe loaded (moe_version(), MOE_VERSION_STRING of moe.h)."""
    return _L.moe_version().decode()


def library_path():
    """The path libmoe was loaded from."""
    return _LIB_PATH


__version__ = version()

# ---- enums ------------------------------------------------------------------------------------------


class Status(enum.IntEnum):
    """moe_status (MOE_STATUS_LIST in moe_quant.h); the member names are the C names."""

    MOE_OK = 0
    MOE_ERR_NULL = -1
    MOE_ERR_SHAPE = -2
    MOE_ERR_EXPERT_ID = -3
    MOE_ERR_WORKSPACE = -4
    MOE_ERR_UNSUPPORTED = -5
    MOE_ERR_DESCRIPTOR = -6
    MOE_ERR_OVERFLOW = -7
    MOE_ERR_BUFFER = -8
    MOE_ERR_ARG = -9


class MoeError(RuntimeError):
    """A status other than MOE_OK from libmoe: .status (int), .name ("MOE_ERR_SHAPE"), .message
    (moe_status_str()), .call (the C function, when known)."""

    def __init__(self, status, name=None, message=None, call=None):
        status = int(status)
        if name is None:
            name = Status(status).name if status in Status._value2member_map_ else "MOE_STATUS_%d" % status
        if message is None:
            message = _L.moe_status_str(status).decode()
        super().__init__(status, name, message)
        self.status, self.name, self.message, self.call = status, name, message, call

    def __str__(self):
        return "%s%s (%d): %s" % (self.call + ": " if self.call else "", self.name, self.status, self.message)


def _check(st, call):
    if st != 0:
        raise MoeError(st, call=call)


class _Named(enum.IntEnum):
    """An IntEnum that also parses its lower-case names ("int4-w4a8", "swiglu_oai", "avx512")."""

    @classmethod
    def parse(cls, v):
        if isinstance(v, cls):
            return v
        if isinstance(v, str):
            key = v.strip().upper().replace("-", "_")
            key = cls._aliases().get(key, key)
            if key in cls.__members__:
                return cls.__members__[key]
            raise ValueError("unknown %s %r (one of %s)" % (cls.__name__, v, ", ".join(m.label for m in cls)))
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and int(v) in cls._value2member_map_:
            return cls(int(v))
        raise ValueError("unknown %s %r" % (cls.__name__, v))

    @classmethod
    def _aliases(cls):
        return {}

    @property
    def label(self):
        return self.name.lower()


class Precision(_Named):
    """moe_precision: BF16, FP16, INT8 (W8A8), FP8 (W8A16, block scales), INT4_W4A8, INT4_W4A16, MXFP4."""

    BF16 = 0
    FP16 = 1
    INT8 = 2
    FP8 = 3
    INT4_W4A8 = 4
    INT4_W4A16 = 5
    MXFP4 = 6

    @property
    def label(self):
        """The library's name: "bf16", "fp16", "int8", "fp8", "int4-w4a8", "int4-w4a16", "mxfp4"."""
        return _L.moe_precision_name(int(self)).decode()

    @property
    def a8(self):
        """Activations quantized per token to int8 (INT8, INT4_W4A8); else rounded to bf16."""
        return self in (Precision.INT8, Precision.INT4_W4A8)


class Activation(_Named):
    """moe_activation: SILU (default), GELU_TANH, SWIGLU_OAI (gpt-oss, with alpha and limit)."""

    SILU = 0
    GELU_TANH = 1
    SWIGLU_OAI = 2

    @classmethod
    def _aliases(cls):
        return {"GELU": "GELU_TANH", "SWIGLU": "SWIGLU_OAI"}


class RouteKind(_Named):
    """moe_route_kind: SOFTMAX, SIGMOID, GROUPED (DeepSeek-V2), BIASED_GROUPED (DeepSeek-V3)."""

    SOFTMAX = 0
    SIGMOID = 1
    GROUPED = 2
    BIASED_GROUPED = 3


class DType(_Named):
    """moe_dtype of activations, outputs and logits: BF16 (uint16 bits), F16, F32."""

    BF16 = 0
    F16 = 1
    F32 = 2

    @classmethod
    def _aliases(cls):
        return {"FP16": "F16", "FLOAT16": "F16", "HALF": "F16", "FP32": "F32", "FLOAT32": "F32",
                "FLOAT": "F32", "BFLOAT16": "BF16"}


class Isa(_Named):
    """moe_isa: kernel tiers (values are the C ones)."""

    SCALAR = 0
    AVX512 = 1
    AMX = 2
    AVX2 = 3
    AVX_VNNI = 4

    @property
    def label(self):
        return _L.moe_isa_name(int(self)).decode()


# ---- array helpers -------------------------------------------------------------------------------------

try:  # Debian bookworm has no ml_dtypes; where it is installed its arrays are accepted too
    import ml_dtypes as _mld

    _ML_BF16 = np.dtype(_mld.bfloat16)
    _ML_E4M3 = np.dtype(_mld.float8_e4m3fn)
except Exception:  # noqa: BLE001 (any import problem: go without it)
    _mld, _ML_BF16, _ML_E4M3 = None, None, None


def _ptr(a):
    return None if a is None else a.ctypes.data


def _c(a, dtype=None):
    """A C-contiguous array (a copy only where needed)."""
    return np.ascontiguousarray(a, dtype=dtype)


def _cdiv(a, b):
    return -(-a // b)


def _float32(a, what, shape=None):
    """Float data as a contiguous float32 array of the given shape (a cast from float16/float64)."""
    a = np.asarray(a)
    if a.dtype.kind != "f" and not (_ML_BF16 is not None and a.dtype == _ML_BF16):
        raise TypeError("%s must be a float array, not %s" % (what, a.dtype))
    if shape is not None and tuple(a.shape) != tuple(shape):
        raise ValueError("%s has shape %s, expected %s" % (what, tuple(a.shape), tuple(shape)))
    return _c(a, np.float32)


def _exact(a, what, dtypes, shape=None):
    """An array of one of the given dtypes (no cast), contiguous, with the given shape."""
    a = np.asarray(a)
    if a.dtype not in [np.dtype(d) for d in dtypes]:
        raise TypeError("%s must be %s, not %s" % (what, " or ".join(str(np.dtype(d)) for d in dtypes), a.dtype))
    if shape is not None and tuple(a.shape) != tuple(shape):
        raise ValueError("%s has shape %s, expected %s" % (what, tuple(a.shape), tuple(shape)))
    return _c(a)


def _ids(a, what, shape=None):
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise TypeError("%s must be an integer array, not %s" % (what, a.dtype))
    if shape is not None and tuple(a.shape) != tuple(shape):
        raise ValueError("%s has shape %s, expected %s" % (what, tuple(a.shape), tuple(shape)))
    if a.dtype != np.int32 and a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < -(2**31) or hi >= 2**31:
            raise ValueError("%s holds values outside int32" % what)
    return _c(a, np.int32)


def to_bf16(a):
    """float32 (or any float) values to bfloat16 bit patterns (uint16), rounded to nearest even as
    libmoe does (NaN stays NaN)."""
    a = _c(np.asarray(a), np.float32)
    out = np.empty(a.shape, np.uint16)
    if a.size:
        _L.moe_convert_from_f32(int(DType.BF16), _ptr(a), _ptr(out), a.size)
    return out


def from_bf16(a):
    """bfloat16 bit patterns (uint16, or ml_dtypes.bfloat16) to float32, exactly."""
    a = np.asarray(a)
    if _ML_BF16 is not None and a.dtype == _ML_BF16:
        a = a.view(np.uint16)
    a = _exact(a, "bf16 array", [np.uint16])
    out = np.empty(a.shape, np.float32)
    if a.size:
        _L.moe_convert_to_f32(int(DType.BF16), _ptr(a), _ptr(out), a.size)
    return out


def _np_to_dtype(a, dtype, what):
    """(DType, array in the C representation: float32, float16 or uint16 bits, ml flag). dtype (the
    call's) says how to read uint16 arrays ("bf16" default, "fp16") and converts float arrays to it."""
    a = np.asarray(a)
    want = None if dtype is None else DType.parse(dtype)
    ml = False
    if a.dtype == np.float32:
        nat = DType.F32
    elif a.dtype == np.float16:
        nat = DType.F16
    elif _ML_BF16 is not None and a.dtype == _ML_BF16:
        nat, a, ml = DType.BF16, a.view(np.uint16), True
    elif a.dtype == np.uint16:
        if want == DType.F32:
            raise TypeError("%s: a uint16 array holds bf16 or fp16 bits, not f32" % what)
        nat = want if want is not None else DType.BF16
        if nat == DType.F16:
            a = a.view(np.float16)
    else:
        raise TypeError("%s must be float32, float16 or bf16 (uint16 bits), not %s" % (what, a.dtype))
    if want is not None and want != nat:  # convert float data to the call's dtype
        f = a.astype(np.float32) if nat != DType.BF16 else from_bf16(a)
        a = f if want == DType.F32 else f.astype(np.float16) if want == DType.F16 else to_bf16(f)
        nat = want
    return nat, _c(a), ml and nat == DType.BF16


def _out_dtype(t):
    return {DType.F32: np.float32, DType.F16: np.float16, DType.BF16: np.uint16}[t]


# ---- quantizers --------------------------------------------------------------------------------------


def _weight3(w, what="w"):
    w = _float32(w, what)
    if w.ndim not in (2, 3) or 0 in w.shape:
        raise ValueError("%s must be [E, rows, cols] (or [rows, cols]) and not empty, got shape %s" % (what, w.shape))
    return w.ndim == 2, (w[None] if w.ndim == 2 else w)


def quantize_weight_int8(w):
    """f32 [E, rows, cols] -> (q int8 [E, rows, cols], scale f32 [E, rows]): per output channel."""
    flat, w = _weight3(w)
    E, R, C = w.shape
    q, s = np.empty((E, R, C), np.int8), np.empty((E, R), np.float32)
    _L.moe_quantize_weight_int8(_ptr(w), E, R, C, _ptr(q), _ptr(s))
    return (q[0], s[0]) if flat else (q, s)


def _block(block):
    if block is None:
        return 128, 128
    if isinstance(block, (int, np.integer)):
        return int(block), int(block)
    bn, bk = block
    return int(bn), int(bk)


def quantize_weight_fp8(w, block=(128, 128)):
    """f32 [E, rows, cols] -> (q uint8 e4m3 [E, rows, cols], scale f32 [E, ceil(rows/bn), ceil(cols/bk)]),
    block = (bn, bk) (an int for square blocks; partial edge blocks allowed)."""
    flat, w = _weight3(w)
    E, R, C = w.shape
    bn, bk = _block(block)
    if bn < 1 or bk < 1 or bn > 2**31 - 1 or bk > 2**31 - 1:
        raise ValueError("block sizes must be >= 1, got %s" % ((bn, bk),))
    q, s = np.empty((E, R, C), np.uint8), np.empty((E, _cdiv(R, bn), _cdiv(C, bk)), np.float32)
    _L.moe_quantize_weight_fp8(_ptr(w), E, R, C, bn, bk, _ptr(q), _ptr(s))
    return (q[0], s[0]) if flat else (q, s)


def quantize_weight_int4(w, group=128):
    """f32 [E, rows, cols] -> (q uint8 [E, rows, ceil(cols/2)] two codes per byte, low nibble first;
    scale f32 and zero uint8 [E, rows, ceil(cols/group)]); group a multiple of 32."""
    flat, w = _weight3(w)
    E, R, C = w.shape
    group = int(group)
    if group < 32 or group % 32 or group > 2**31 - 1:
        raise ValueError("group must be a positive multiple of 32, got %d" % group)
    ng = _cdiv(C, group)
    q = np.empty((E, R, _cdiv(C, 2)), np.uint8)
    s, z = np.empty((E, R, ng), np.float32), np.empty((E, R, ng), np.uint8)
    _L.moe_quantize_weight_int4(_ptr(w), E, R, C, group, _ptr(q), _ptr(s), _ptr(z))
    return (q[0], s[0], z[0]) if flat else (q, s, z)


def quantize_weight_mxfp4(w):
    """f32 [E, rows, cols] -> (q uint8 [E, rows, ceil(cols/2)] e2m1 pairs, e8m0 uint8 [E, rows, ceil(cols/32)])."""
    flat, w = _weight3(w)
    E, R, C = w.shape
    q, s = np.empty((E, R, _cdiv(C, 2)), np.uint8), np.empty((E, R, _cdiv(C, 32)), np.uint8)
    _L.moe_quantize_weight_mxfp4(_ptr(w), E, R, C, _ptr(q), _ptr(s))
    return (q[0], s[0]) if flat else (q, s)


def quantize_row_u8(x):
    """Per-token symmetric int8 of the rows of x (f32 [..., n]) as the A8 precisions do it:
    (q uint8 = int8 + 128 [..., n], scale f32 [...])."""
    x = _float32(x, "x")
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError("x must have a non-empty last axis")
    rows = x.reshape(-1, x.shape[-1])
    q = np.empty(rows.shape, np.uint8)
    s = np.empty(rows.shape[0], np.float32)
    for i in range(rows.shape[0]):
        s[i] = _L.moe_quantize_row_u8(_ptr(rows[i]), rows.shape[1], _ptr(q[i]))
    return q.reshape(x.shape), s.reshape(x.shape[:-1])


def precision_compiled(precision):
    """Whether libmoe was built with this precision (not removed by a MOE_NO_* macro)."""
    return bool(_L.moe_precision_compiled(int(Precision.parse(precision))))


# ---- importers ---------------------------------------------------------------------------------------


def _scale_type(a, what):
    """A checkpoint's scale array: (contiguous array, DType code) for f32, f16 and bf16 (uint16 bits)."""
    a = np.asarray(a)
    if _ML_BF16 is not None and a.dtype == _ML_BF16:
        a = a.view(np.uint16)
    if a.dtype == np.float32:
        return _c(a), DType.F32
    if a.dtype == np.float16:
        return _c(a), DType.F16
    if a.dtype == np.uint16:
        return _c(a), DType.BF16
    raise TypeError("%s must be float16, float32 or bf16 (uint16 bits), not %s" % (what, a.dtype))


def _stack(t, what, n):
    """A projection's tensors: a tuple (or list) of n arrays, each with a leading expert axis."""
    if not isinstance(t, (tuple, list)) or len(t) != n:
        raise TypeError("%s must be a tuple of %d arrays" % (what, n))
    return [np.asarray(a) for a in t]


def _expert_axis(arrays, names, ndims):
    """Adds the expert axis where the arrays come without it; returns (arrays, E)."""
    flat = arrays[0].ndim == ndims - 1
    out = []
    for a, name in zip(arrays, names):
        if a is None:
            out.append(None)
            continue
        if flat:
            a = a[None]
        if a.ndim != ndims:
            raise ValueError("%s has %d dimensions, expected %d (with the expert axis)" % (name, a.ndim, ndims))
        out.append(a)
    E = out[0].shape[0]
    for a, name in zip(out, names):
        if a is not None and a.shape[0] != E:
            raise ValueError("%s has %d experts, expected %d" % (name, a.shape[0], E))
    return out, E


def _fp8_codes(a, what):
    a = np.asarray(a)
    if _ML_E4M3 is not None and a.dtype == _ML_E4M3:
        a = a.view(np.uint8)
    return _exact(a, what, [np.uint8])


def import_fp8_block(gate, up, down, block=(128, 128)):
    """DeepSeek-V3 style block FP8 (quant_method "fp8"): each projection a tuple (weight, weight_scale_inv):
    gate, up: e4m3 (uint8) [E, N, K] and f32 [E, ceil(N/bn), ceil(K/bk)]; down: [E, K, N] and
    [E, ceil(K/bn), ceil(N/bk)] (the expert axis may be left out for one expert). Returns the keyword
    arguments of Experts: dict(precision, w13, w13_scale, w2, w2_scale, block). When N is not a multiple
    of bn (DeepSeek-style 128-row blocks with N = 192: gate and up each own a partial last block), the
    scales are re-blocked to gcd(bn, N) rows, exactly (moe_import_fp8_block_rows), and block says so."""
    bn, bk = _block(block)
    (gw, gs), (uw, us), (dw, ds) = _stack(gate, "gate", 2), _stack(up, "up", 2), _stack(down, "down", 2)
    (gw, gs, uw, us, dw, ds), E = _expert_axis(
        [gw, gs, uw, us, dw, ds], ["gate weight", "gate scale", "up weight", "up scale", "down weight", "down scale"], 3)
    N, K = gw.shape[1], gw.shape[2]
    gw, uw, dw = _fp8_codes(gw, "gate weight"), _fp8_codes(uw, "up weight"), _fp8_codes(dw, "down weight")
    gs, us, ds = (_float32(s, n) for s, n in ((gs, "gate scale"), (us, "up scale"), (ds, "down scale")))
    w13 = np.zeros((E, 2 * N, K), np.uint8)
    w2 = np.zeros((E, dw.shape[1], dw.shape[2] if dw.ndim == 3 else 0), np.uint8)
    if bn >= 1 and bk >= 1:
        for a, shp, name in ((uw, (E, N, K), "up weight"), (dw, (E, K, N), "down weight"),
                             (gs, (E, _cdiv(N, bn), _cdiv(K, bk)), "gate scale"),
                             (us, (E, _cdiv(N, bn), _cdiv(K, bk)), "up scale"),
                             (ds, (E, _cdiv(K, bn), _cdiv(N, bk)), "down scale")):
            if a.shape != shp:
                raise ValueError("%s has shape %s, expected %s" % (name, a.shape, shp))
    dbn = bn if bn < 1 or N % bn == 0 else math.gcd(bn, N)  # the destination's block rows
    if bn >= 1 and bk >= 1:
        s13 = np.zeros((E, _cdiv(2 * N, dbn), _cdiv(K, bk)), np.float32)
        s2 = np.zeros((E, _cdiv(K, dbn), _cdiv(N, bk)), np.float32)
    else:  # the library names the problem before it reads anything
        s13 = s2 = np.zeros((E, 1, 1), np.float32)
    projs = ((gw, gs, N, K, w13, s13, 2 * N, 0), (uw, us, N, K, w13, s13, 2 * N, N), (dw, ds, K, N, w2, s2, K, 0))
    for e in range(E):
        for w, sc, rows, cols, q, qs, dst_rows, row0 in projs:  # (dbn == bn: the plain import)
            _check(_L.moe_import_fp8_block_rows(_ptr(w[e]), _ptr(sc[e]), rows, cols, bn, bk, dbn, _ptr(q[e]),
                                                _ptr(qs[e]), dst_rows, row0), "moe_import_fp8_block_rows")
    return dict(precision=Precision.FP8, w13=w13, w13_scale=s13, w2=w2, w2_scale=s2, block=(dbn, bk))


def _int4_precision(precision):
    p = Precision.parse(precision)
    if p not in (Precision.INT4_W4A16, Precision.INT4_W4A8):
        raise ValueError("AWQ/GPTQ weights are int4: precision must be int4-w4a16 or int4-w4a8, not %s" % p.label)
    return p


def _int4_plain(E, N, K, ng13, ng2):
    """The plain int4 arrays an importer fills: codes, scales and zero points of W13 and W2."""
    w13, w2 = np.zeros((E, 2 * N, _cdiv(K, 2)), np.uint8), np.zeros((E, K, _cdiv(N, 2)), np.uint8)
    s13, z13 = np.zeros((E, 2 * N, ng13), np.float32), np.zeros((E, 2 * N, ng13), np.uint8)
    s2, z2 = np.zeros((E, K, ng2), np.float32), np.zeros((E, K, ng2), np.uint8)
    return w13, s13, z13, w2, s2, z2


def import_awq(gate, up, down, group, precision="int4-w4a16"):
    """AutoAWQ GEMM checkpoints: each projection a tuple (qweight int32 [E, in, out/8], qzeros int32
    [E, in/group, out/8], scales f16 [E, in/group, out]) in AWQ's nibble order; gate and up have
    in = K, out = N, down has in = N, out = K. Returns the keyword arguments of Experts:
    dict(precision, w13, w13_scale, w13_zero, w2, w2_scale, w2_zero, group)."""
    p = _int4_precision(precision)
    group = int(group)
    projs = [_stack(gate, "gate", 3), _stack(up, "up", 3), _stack(down, "down", 3)]
    names = [pn + " " + t for pn in ("gate", "up", "down") for t in ("qweight", "qzeros", "scales")]
    arrs, E = _expert_axis([a for pr in projs for a in pr], names, 3)
    K, N = arrs[0].shape[1], arrs[0].shape[2] * 8
    qws = [_exact(arrs[i], names[i], [np.int32, np.uint32]) for i in (0, 3, 6)]
    qzs = [_exact(arrs[i], names[i], [np.int32, np.uint32]) for i in (1, 4, 7)]
    scs = [_scale_type(arrs[i], names[i]) for i in (2, 5, 8)]
    sane = group >= 1 and group % 32 == 0 and K % group == 0 and N % group == 0
    dims = [(N, K), (N, K), (K, N)]  # rows (out), cols (in) of each projection
    if sane:
        for j, (rows, cols) in enumerate(dims):
            for a, shp, name in ((qws[j], (E, cols, rows // 8), names[3 * j]),
                                 (qzs[j], (E, cols // group, rows // 8), names[3 * j + 1]),
                                 (scs[j][0], (E, cols // group, rows), names[3 * j + 2])):
                if a.shape != shp:
                    raise ValueError("%s has shape %s, expected %s" % (name, a.shape, shp))
        ng13, ng2 = K // group, N // group
    else:
        ng13 = ng2 = 1
    w13, s13, z13, w2, s2, z2 = _int4_plain(E, N, K, ng13, ng2)
    for e in range(E):
        for j, (rows, cols) in enumerate(dims):
            q, s, z, dst_rows, row0 = (w13, s13, z13, 2 * N, N * j) if j < 2 else (w2, s2, z2, K, 0)
            sc, st = scs[j]
            _check(_L.moe_import_awq(_ptr(qws[j][e]), _ptr(qzs[j][e]), _ptr(sc[e]), int(st), rows, cols, group,
                                     _ptr(q[e]), _ptr(s[e]), _ptr(z[e]), dst_rows, row0), "moe_import_awq")
    return dict(precision=p, w13=w13, w13_scale=s13, w13_zero=z13, w2=w2, w2_scale=s2, w2_zero=z2, group=group)


def import_gptq(gate, up, down, group, bits=4, precision="int4-w4a16"):
    """GPTQ v1 checkpoints (AutoGPTQ, GPTQModel "gptq"): each projection a tuple (qweight int32
    [E, in/8, out], qzeros int32 [E, ceil(in/group), out/8], scales f16 [E, ceil(in/group), out]) or with a
    fourth element g_idx int32 [E, in] (only the trivial i // group is representable: act-order raises
    MOE_ERR_UNSUPPORTED). gate and up have in = K, out = N; down has in = N, out = K. Returns the keyword
    arguments of Experts: dict(precision, w13, w13_scale, w13_zero, w2, w2_scale, w2_zero, group)."""
    p = _int4_precision(precision)
    group, bits = int(group), int(bits)
    projs = []
    for t, name in ((gate, "gate"), (up, "up"), (down, "down")):
        if not isinstance(t, (tuple, list)) or len(t) not in (3, 4):
            raise TypeError("%s must be a tuple (qweight, qzeros, scales[, g_idx])" % name)
        projs.append(list(t) + [None] * (4 - len(t)))
    names = [pn + " " + t for pn in ("gate", "up", "down") for t in ("qweight", "qzeros", "scales", "g_idx")]
    raw = [None if a is None else np.asarray(a) for pr in projs for a in pr]
    arrs, E = _expert_axis([None if i % 4 == 3 else a for i, a in enumerate(raw)], names, 3)
    for i in (3, 7, 11):  # g_idx: [E, in], or [in] shared by the experts
        if raw[i] is not None:
            g = raw[i]
            if g.ndim not in (1, 2):
                raise ValueError("%s must be [E, in] or [in], got shape %s" % (names[i], g.shape))
            arrs[i] = _ids(np.broadcast_to(g, (E,) + g.shape) if g.ndim == 1 else g, names[i])
    K, N = arrs[0].shape[1] * 8, arrs[0].shape[2]
    qws = [_exact(arrs[i], names[i], [np.int32, np.uint32]) for i in (0, 4, 8)]
    qzs = [_exact(arrs[i], names[i], [np.int32, np.uint32]) for i in (1, 5, 9)]
    scs = [_scale_type(arrs[i], names[i]) for i in (2, 6, 10)]
    gis = [arrs[i] for i in (3, 7, 11)]
    dims = [(N, K), (N, K), (K, N)]
    sane = bits == 4 and group >= 1 and group % 32 == 0 and N % 8 == 0 and K % 8 == 0
    if sane:
        for j, (rows, cols) in enumerate(dims):
            checks = [(qws[j], (E, cols // 8, rows), names[4 * j]),
                      (qzs[j], (E, _cdiv(cols, group), rows // 8), names[4 * j + 1]),
                      (scs[j][0], (E, _cdiv(cols, group), rows), names[4 * j + 2])]
            if gis[j] is not None:
                checks.append((gis[j], (E, cols), names[4 * j + 3]))
            for a, shp, name in checks:
                if a.shape != shp:
                    raise ValueError("%s has shape %s, expected %s" % (name, a.shape, shp))
        ng13, ng2 = _cdiv(K, group), _cdiv(N, group)
    else:
        ng13 = ng2 = 1
    w13, s13, z13, w2, s2, z2 = _int4_plain(E, N, K, ng13, ng2)
    for e in range(E):
        for j, (rows, cols) in enumerate(dims):
            q, s, z, dst_rows, row0 = (w13, s13, z13, 2 * N, N * j) if j < 2 else (w2, s2, z2, K, 0)
            sc, st = scs[j]
            gi = None if gis[j] is None else gis[j][e]
            _check(_L.moe_import_gptq(_ptr(qws[j][e]), _ptr(qzs[j][e]), _ptr(sc[e]), int(st), _ptr(gi), bits, rows,
                                      cols, group, _ptr(q[e]), _ptr(s[e]), _ptr(z[e]), dst_rows, row0),
                   "moe_import_gptq")
    return dict(precision=p, w13=w13, w13_scale=s13, w13_zero=z13, w2=w2, w2_scale=s2, w2_zero=z2, group=group)


def import_bias(bias, gate_up_interleaved=False):
    """A checkpoint bias (f32, f16 or bf16 as uint16 bits) [..., n] to f32 [..., n]; with
    gate_up_interleaved (gpt-oss gate_up_proj_bias [E, 2N]) element 2i goes to i and 2i + 1 to n/2 + i."""
    b, t = _scale_type(bias, "bias")
    if b.ndim < 1:
        raise ValueError("bias must have at least one dimension")
    if b.size == 0:
        return np.zeros(b.shape, np.float32)
    rows = b.reshape(-1, b.shape[-1])
    out = np.empty(rows.shape, np.float32)
    for i in range(rows.shape[0]):
        _check(_L.moe_import_bias(_ptr(rows[i]), int(t), rows.shape[1], int(bool(gate_up_interleaved)), _ptr(out[i])),
               "moe_import_bias")
    return out.reshape(b.shape)


def _mx_blocks(a, name, E, rows):
    """gpt-oss *_blocks [E, rows, cols/32, 16] (or already [E, rows, cols/2]) as uint8 [E, rows, cols/2]."""
    a = _exact(a, name, [np.uint8])
    if a.ndim == 4:
        if a.shape[3] != 16:
            raise ValueError("%s has shape %s: the last axis must be 16 (32 codes)" % (name, a.shape))
        a = a.reshape(a.shape[0], a.shape[1], a.shape[2] * 16)
    if a.ndim != 3 or a.shape[:2] != (E, rows):
        raise ValueError("%s has shape %s, expected [%d, %d, cols/32, 16]" % (name, a.shape, E, rows))
    return a


def import_mxfp4(gate_up=None, down=None, *, gate=None, up=None, gate_up_interleaved=None, gate_up_bias=None,
                 down_bias=None):
    """gpt-oss MXFP4 experts: gate_up = (gate_up_proj_blocks uint8 [E, 2N, K/32, 16], gate_up_proj_scales
    uint8 e8m0 [E, 2N, K/32]) with gate/up rows interleaved (gate_up_interleaved defaults to True), or
    gate = (...) and up = (...) of [E, N, ...] each; down = (blocks [E, K, N/32, 16], scales [E, K, N/32]).
    Optional biases (f32, f16 or bf16 bits): gate_up_bias [E, 2N] (interleaved like the rows), down_bias
    [E, K]. Returns the keyword arguments of Experts: dict(precision, w13, w13_scale (e8m0), w2,
    w2_scale (e8m0)[, b13][, b2])."""
    if down is None or (gate_up is None) == (gate is None and up is None) or (gate is None) != (up is None):
        raise TypeError("give down and either gate_up or both gate and up")
    if gate_up is not None:
        inter = True if gate_up_interleaved is None else bool(gate_up_interleaved)
        parts = [_stack(gate_up, "gate_up", 2)]
    else:
        if gate_up_interleaved:
            raise ValueError("gate_up_interleaved needs the fused gate_up tensors")
        inter = False
        parts = [_stack(gate, "gate", 2), _stack(up, "up", 2)]
    db, ds = _stack(down, "down", 2)
    if any(s.ndim not in (2, 3) for _, s in parts) or ds.ndim not in (2, 3):
        raise ValueError("scales must be [E, rows, cols/32] (or [rows, cols/32] for one expert)")
    flat = parts[0][1].ndim == 2  # scales [rows, cols/32]: one expert without its axis
    if flat:
        parts = [[b[None], s[None]] for b, s in parts]
        db, ds = db[None], ds[None]
    E, rows0 = parts[0][1].shape[0], parts[0][1].shape[1]
    N = rows0 // 2 if gate_up is not None else rows0
    K = db.shape[1]
    if gate_up is not None and rows0 % 2:
        raise ValueError("gate_up has %d rows: it must be 2N" % rows0)
    for b, s in parts:
        if s.ndim != 3 or s.shape[0] != E:
            raise ValueError("gate/up scales must be [E, rows, K/32], got %s" % (s.shape,))
    K32 = parts[0][1].shape[2]
    if K32 * 32 != K:
        raise ValueError("gate/up scales have %d blocks per row, but down has K = %d rows" % (K32, K))
    w13, s13 = np.zeros((E, 2 * N, K // 2), np.uint8), np.zeros((E, 2 * N, K32), np.uint8)
    w2, s2 = np.zeros((E, K, _cdiv(N, 2)), np.uint8), np.zeros((E, K, _cdiv(N, 32)), np.uint8)
    srcs = []
    for j, (b, s) in enumerate(parts):
        rows = rows0
        name = "gate_up" if gate_up is not None else ("gate", "up")[j]
        b = _mx_blocks(b, name + " blocks", E, rows)
        s = _exact(s, name + " scales", [np.uint8], (E, rows, K32))
        if b.shape[2] != K // 2:
            raise ValueError("%s blocks hold %d bytes per row, expected K/2 = %d" % (name, b.shape[2], K // 2))
        srcs.append((b, s, rows, N * j))
    db = _mx_blocks(db, "down blocks", E, K)
    if db.shape[2] * 2 != N or N % 32:
        raise ValueError("down blocks hold %d bytes per row; N = %d must be a multiple of 32" % (db.shape[2], N))
    ds = _exact(ds, "down scales", [np.uint8], (E, K, N // 32))
    for e in range(E):
        for b, s, rows, row0 in srcs:
            _check(_L.moe_import_mxfp4(_ptr(b[e]), _ptr(s[e]), rows, K, int(inter), _ptr(w13[e]), _ptr(s13[e]), 2 * N,
                                       row0), "moe_import_mxfp4")
        _check(_L.moe_import_mxfp4(_ptr(db[e]), _ptr(ds[e]), K, N, 0, _ptr(w2[e]), _ptr(s2[e]), K, 0),
               "moe_import_mxfp4")
    out = dict(precision=Precision.MXFP4, w13=w13, w13_scale=s13, w2=w2, w2_scale=s2)
    if gate_up_bias is not None:
        b13 = np.asarray(gate_up_bias)
        b13 = b13[None] if b13.ndim == 1 else b13
        if b13.shape != (E, 2 * N):
            raise ValueError("gate_up_bias has shape %s, expected %s" % (b13.shape, (E, 2 * N)))
        out["b13"] = import_bias(b13, gate_up_interleaved=inter)
    if down_bias is not None:
        b2 = np.asarray(down_bias)
        b2 = b2[None] if b2.ndim == 1 else b2
        if b2.shape != (E, K):
            raise ValueError("down_bias has shape %s, expected %s" % (b2.shape, (E, K)))
        out["b2"] = import_bias(b2)
    return out


def deinterleave_gate_up(a):
    """Gate/up interleaved rows (gpt-oss: row 2i gate i, row 2i + 1 up i) of a [E, 2N, ...] array (any
    dtype: weights, scales, zero points, biases [E, 2N]) to gate rows first, then up rows."""
    a = _c(np.asarray(a))
    if a.ndim < 2 or a.shape[1] % 2 or a.shape[1] == 0 or a.shape[0] == 0:
        raise ValueError("expected [E, 2N, ...] with 2N even and > 0, got shape %s" % (a.shape,))
    out = np.empty_like(a)
    row_bytes = int(np.prod(a.shape[2:], dtype=np.int64)) * a.itemsize
    _check(_L.moe_deinterleave_gate_up(_ptr(a), _ptr(out), a.shape[0], a.shape[1] // 2, row_bytes),
           "moe_deinterleave_gate_up")
    return out


def expert_map_contiguous(n_global, n_ranks, rank):
    """Expert parallelism: (map int32 [n_global], E_local) of one rank (moe_expert_map_contiguous)."""
    m = np.empty(max(int(n_global), 1), np.int32)
    el = ctypes.c_int32(0)
    _check(_L.moe_expert_map_contiguous(int(n_global), int(n_ranks), int(rank), _ptr(m), ctypes.addressof(el)),
           "moe_expert_map_contiguous")
    return m[: int(n_global)], el.value


# ---- packed experts ------------------------------------------------------------------------------------

_PHASES = ("prepare", "sort", "gemm1", "requant", "gemm2", "combine")
_OMP_WTIME = _lib.omp_wtime(_L)
_PY_CLOCK = _lib.CLOCK_FN(__import__("time").perf_counter)


def _codes(p, a, what):
    """Weight codes of precision p as the plain C layout wants them."""
    a = np.asarray(a)
    if p == Precision.BF16:
        if _ML_BF16 is not None and a.dtype == _ML_BF16:
            return _c(a.view(np.uint16))
        if a.dtype.kind == "f":
            return to_bf16(a)
        return _exact(a, what, [np.uint16])
    if p == Precision.FP16:
        if a.dtype == np.float16:
            return _c(a.view(np.uint16))
        if a.dtype.kind == "f":
            return _c(a.astype(np.float16).view(np.uint16))
        return _exact(a, what, [np.uint16])
    if p == Precision.INT8:
        return _exact(a, what, [np.int8])
    if p == Precision.FP8:
        return _fp8_codes(a, what)
    return _exact(a, what, [np.uint8])


class Experts:
    """Routed experts packed once into libmoe's kernel layout (moe_pack); the pack buffer lives as
    long as this object. Plain layouts (moe_quant.h), gate rows first:

        w13 [E, 2N, K], w2 [E, K, N]: bf16 (uint16 bits; float arrays are rounded), fp16 (float16 or
            uint16 bits), int8 (int8), fp8 (uint8 e4m3); int4 and mxfp4: uint8 [E, 2N, ceil(K/2)] and
            [E, K, ceil(N/2)], two codes per byte, low nibble first. [2N, K] and [K, N] mean E = 1.
        int8:  w13_scale [E, 2N], w2_scale [E, K] (f32, per output channel)
        fp8:   w13_scale [E, ceil(2N/bn), ceil(K/bk)], w2_scale [E, ceil(K/bn), ceil(N/bk)], block=(bn, bk)
        int4:  w13_scale, w13_zero [E, 2N, ceil(K/group)]; w2_scale, w2_zero [E, K, ceil(N/group)]; group
        mxfp4: w13_scale (or w13_e8m0) uint8 [E, 2N, ceil(K/32)], w2_scale [E, K, ceil(N/32)]
        b13 [E, 2N], b2 [E, K]: optional f32 biases
        threads: packing threads (moe_pack_parallel; None: OpenMP's default), the same bytes for any

    Calling it runs the layer (moe_fused_experts); see __call__."""

    def __init__(self, precision, w13, w2, *, w13_scale=None, w2_scale=None, w13_zero=None, w2_zero=None,
                 w13_e8m0=None, w2_e8m0=None, b13=None, b2=None, block=None, group=None, threads=None):
        p = Precision.parse(precision)
        if p == Precision.MXFP4:
            if w13_e8m0 is not None:
                if w13_scale is not None:
                    raise TypeError("give w13_scale or w13_e8m0, not both")
                w13_scale = w13_e8m0
            if w2_e8m0 is not None:
                if w2_scale is not None:
                    raise TypeError("give w2_scale or w2_e8m0, not both")
                w2_scale = w2_e8m0
        elif w13_e8m0 is not None or w2_e8m0 is not None:
            raise TypeError("w13_e8m0/w2_e8m0 are mxfp4 scales, not %s" % p.label)
        w13, w2 = np.asarray(w13), np.asarray(w2)
        if w13.ndim != w2.ndim or w13.ndim not in (2, 3):
            raise ValueError("w13 and w2 must both be [E, rows, cols] (or both [rows, cols] for one expert), "
                             "got shapes %s and %s" % (w13.shape, w2.shape))
        flat = w13.ndim == 2

        def e_axis(a):
            return None if a is None else (np.asarray(a)[None] if flat else np.asarray(a))

        w13, w2 = e_axis(w13), e_axis(w2)
        w13_scale, w2_scale, w13_zero, w2_zero = map(e_axis, (w13_scale, w2_scale, w13_zero, w2_zero))
        b13, b2 = e_axis(b13), e_axis(b2)
        E, rows13 = w13.shape[0], w13.shape[1]
        if rows13 % 2 or rows13 == 0 or E == 0 or w2.shape[0] != E or w2.shape[1] == 0:
            raise ValueError("w13 must be [E, 2N, ...] and w2 [E, K, ...], got shapes %s and %s" % (w13.shape, w2.shape))
        N, K = rows13 // 2, w2.shape[1]
        four = p in (Precision.INT4_W4A8, Precision.INT4_W4A16, Precision.MXFP4)
        c13, c2 = (_cdiv(K, 2), _cdiv(N, 2)) if four else (K, N)
        w13 = _codes(p, w13, "w13")
        w2 = _codes(p, w2, "w2")
        if w13.shape != (E, 2 * N, c13) or w2.shape != (E, K, c2):
            raise ValueError("%s weights: w13 %s and w2 %s, expected %s and %s (N = %d, K = %d)"
                             % (p.label, w13.shape, w2.shape, (E, 2 * N, c13), (E, K, c2), N, K))
        bn, bk = _block(block) if block is not None else (128, 128)
        g = 128 if group is None or int(group) == 0 else int(group)
        if p != Precision.FP8 and block is not None:
            raise TypeError("block is for fp8, not %s" % p.label)
        if p not in (Precision.INT4_W4A8, Precision.INT4_W4A16) and group is not None:
            raise TypeError("group is for int4, not %s" % p.label)
        if bn < 1 or bk < 1 or g < 1:
            raise ValueError("block sizes and group must be >= 1, got block %s, group %d" % ((bn, bk), g))
        need = {  # the metadata each precision takes: name -> (array, shape, kind)
            Precision.INT8: {"w13_scale": (E, 2 * N), "w2_scale": (E, K)},
            Precision.FP8: {"w13_scale": (E, _cdiv(2 * N, bn), _cdiv(K, bk)), "w2_scale": (E, _cdiv(K, bn), _cdiv(N, bk))},
            Precision.INT4_W4A8: {"w13_scale": (E, 2 * N, _cdiv(K, g)), "w2_scale": (E, K, _cdiv(N, g)),
                                  "w13_zero": (E, 2 * N, _cdiv(K, g)), "w2_zero": (E, K, _cdiv(N, g))},
            Precision.MXFP4: {"w13_scale": (E, 2 * N, _cdiv(K, 32)), "w2_scale": (E, K, _cdiv(N, 32))},
        }
        need[Precision.INT4_W4A16] = need[Precision.INT4_W4A8]
        given = {"w13_scale": w13_scale, "w2_scale": w2_scale, "w13_zero": w13_zero, "w2_zero": w2_zero}
        meta = {}
        for name, a in given.items():
            shp = need.get(p, {}).get(name)
            if shp is None:
                if a is not None:
                    raise TypeError("%s is not used by %s weights" % (name, p.label))
                continue
            if a is None:
                raise ValueError("%s weights need %s %s" % (p.label, name, shp))
            if name.endswith("zero"):
                a = _exact(a, name, [np.uint8], shp)
                if a.size and int(a.max()) > 15:
                    raise ValueError("%s holds zero points above 15" % name)
            elif p == Precision.MXFP4:
                a = _exact(a, name + " (e8m0)", [np.uint8], shp)
            else:
                a = _float32(a, name, shp)
            meta[name] = a
        if b13 is not None:
            b13 = _float32(b13, "b13", (E, 2 * N))
        if b2 is not None:
            b2 = _float32(b2, "b2", (E, K))
        w = _lib.moe_weights()
        w.E, w.N, w.K, w.precision = E, N, K, int(p)
        w.w13, w.w2 = _ptr(w13), _ptr(w2)
        if p == Precision.MXFP4:
            w.w13_e8m0, w.w2_e8m0 = _ptr(meta["w13_scale"]), _ptr(meta["w2_scale"])
        else:
            w.w13_scale, w.w2_scale = _ptr(meta.get("w13_scale")), _ptr(meta.get("w2_scale"))
            w.w13_zero, w.w2_zero = _ptr(meta.get("w13_zero")), _ptr(meta.get("w2_zero"))
        w.b13, w.b2 = _ptr(b13), _ptr(b2)
        w.block_n, w.block_k = (bn, bk) if p == Precision.FP8 else (0, 0)
        w.group = g if p in (Precision.INT4_W4A8, Precision.INT4_W4A16) else 0
        self._ex = (ctypes.c_uint64 * _cdiv(_L.moe_experts_size(), 8))()
        size = _L.moe_pack_size(ctypes.byref(w))
        if size == 0:  # invalid: moe_pack says why, before it writes anything
            tiny = np.zeros(64, np.uint8)
            st = _L.moe_pack(ctypes.byref(w), ctypes.addressof(self._ex), _ptr(tiny), tiny.size)
            raise MoeError(st if st != 0 else Status.MOE_ERR_BUFFER, call="moe_pack")
        self._buf = np.empty(size, np.uint8)
        par = _parallel(threads) or ctypes.byref(_lib.moe_parallel(None, None, 0))  # None: OpenMP's threads
        _check(_L.moe_pack_parallel(ctypes.byref(w), ctypes.addressof(self._ex), _ptr(self._buf), size, par),
               "moe_pack_parallel")
        self.precision, self.E, self.N, self.K = p, E, N, K
        self.block = (bn, bk) if p == Precision.FP8 else None
        self.group = g if p in (Precision.INT4_W4A8, Precision.INT4_W4A16) else None
        self.has_bias = b13 is not None or b2 is not None
        self._tls = threading.local()

    @classmethod
    def quantize(cls, precision, w13, w2, *, b13=None, b2=None, block=(128, 128), group=128):
        """Quantizes f32 weights w13 [E, 2N, K], w2 [E, K, N] to the precision with libmoe's quantizers
        (bf16 and fp16: rounded to nearest even) and packs them."""
        p = Precision.parse(precision)
        w13, w2 = _float32(w13, "w13"), _float32(w2, "w2")
        kw = dict(b13=b13, b2=b2)
        if p in (Precision.BF16, Precision.FP16):
            return cls(p, w13, w2, **kw)
        if p == Precision.INT8:
            (q13, s13), (q2, s2) = quantize_weight_int8(w13), quantize_weight_int8(w2)
            return cls(p, q13, q2, w13_scale=s13, w2_scale=s2, **kw)
        if p == Precision.FP8:
            (q13, s13), (q2, s2) = quantize_weight_fp8(w13, block), quantize_weight_fp8(w2, block)
            return cls(p, q13, q2, w13_scale=s13, w2_scale=s2, block=block, **kw)
        if p == Precision.MXFP4:
            (q13, s13), (q2, s2) = quantize_weight_mxfp4(w13), quantize_weight_mxfp4(w2)
            return cls(p, q13, q2, w13_scale=s13, w2_scale=s2, **kw)
        (q13, s13, z13), (q2, s2, z2) = quantize_weight_int4(w13, group), quantize_weight_int4(w2, group)
        return cls(p, q13, q2, w13_scale=s13, w2_scale=s2, w13_zero=z13, w2_zero=z2, group=group, **kw)

    @property
    def nbytes(self):
        """Bytes of the packed buffer."""
        return self._buf.nbytes

    @property
    def _addr(self):
        return ctypes.addressof(self._ex)

    def __repr__(self):
        if not hasattr(self, "_buf"):
            return "moeh.Experts(<not packed>)"
        return "moeh.Experts(%s, E=%d, N=%d, K=%d%s%s%s, %d bytes)" % (
            self.precision.label, self.E, self.N, self.K, ", block=%s" % (self.block,) if self.block else "",
            ", group=%d" % self.group if self.group else "", ", bias" if self.has_bias else "", self.nbytes)

    def _workspace(self, nbytes):
        ws = getattr(self._tls, "ws", None)
        if ws is None or ws.nbytes < nbytes:
            ws = self._tls.ws = np.empty(max(int(nbytes), 64), np.uint8)
        return ws

    def __call__(self, x, topk_weights, topk_ids, *, act="silu", alpha=None, limit=None, shared=None,
                 shared_gate=None, routed_scaling_factor=None, expert_map=None, n_global=None, dtype=None, out=None,
                 threads=None, chunk_tokens=None, stats=None):
        """The layer: out = routed_scaling_factor * sum_j topk_weights[m, j] * expert_{topk_ids[m, j]}(x[m])
        (+ shared expert, times sigmoid(x . shared_gate) when given), expert(x) = act(x W13^T + b13) W2^T + b2.

        x [..., K]: float32, float16, or bf16 (uint16 bits; dtype="fp16" reads uint16 as fp16 bits; a
        dtype different from a float array's converts it). topk_weights [..., topk] float, topk_ids
        [..., topk] int (global ids, -1 skips). act "silu" | "gelu_tanh" | "swiglu_oai" (alpha, limit:
        None means 1.702 and 7). shared: an Experts with E = 1 of the same precision and K; shared_gate
        float [K]. expert_map int [n_global] (global id -> local id or -1) for expert parallelism.
        out: an array to write (shape of x, the call's dtype; may be x itself). threads: None for the
        library's default (OpenMP, all threads), n for n OpenMP threads. stats: a dict to which the
        seconds of each phase are added. Returns out, of x's shape and the call's dtype."""
        self._check_pack()
        call, keep, res = _make_call(self, x, dtype, out, act, alpha, limit, shared, shared_gate,
                                     routed_scaling_factor, chunk_tokens, stats)
        tw = _float32(topk_weights, "topk_weights")
        if tw.ndim < 1 or tw.shape[:-1] != res["lead"] or tw.shape[-1] < 1:
            raise ValueError("topk_weights has shape %s, expected %s + (topk,)" % (tw.shape, res["lead"]))
        ids = _ids(topk_ids, "topk_ids", tw.shape)
        call.topk = tw.shape[-1]
        call.topk_weights, call.topk_ids = _ptr(tw), _ptr(ids)
        keep += [tw, ids]
        _expert_map(call, expert_map, n_global, keep)
        nb = ctypes.c_size_t(0)
        _check(_L.moe_workspace_size(self._addr, ctypes.byref(call), ctypes.byref(nb)), "moe_workspace_size")
        ws = self._workspace(nb.value)
        par = _parallel(threads)
        _check(_L.moe_fused_experts(self._addr, ctypes.byref(call), _ptr(ws), ws.nbytes, par), "moe_fused_experts")
        _fill_stats(stats, res)
        return res["result"]()

    def _check_pack(self):
        if not hasattr(self, "_buf"):
            raise RuntimeError("Experts was not packed")


def _expert_map(call, expert_map, n_global, keep):
    """Sets the call's expert map (global id -> local id or -1) and n_global (default: its length)."""
    if expert_map is None:
        if n_global is not None:
            raise ValueError("n_global needs an expert_map")
        return
    em = _ids(expert_map, "expert_map")
    if em.ndim != 1 or em.size == 0:
        raise ValueError("expert_map must be one-dimensional and not empty")
    n = em.size if n_global is None else int(n_global)
    if not 1 <= n <= em.size:  # the library reads n entries
        raise ValueError("n_global must be in 1..%d (the expert map's entries), got %d" % (em.size, n))
    call.expert_map, call.n_global = _ptr(em), n
    keep.append(em)


def _parallel(threads):
    if threads is None:
        return None
    n = int(threads)
    if n < 0:
        raise ValueError("threads must be >= 1 (or None for the library's default), got %d" % n)
    if n == 0:
        return None
    return ctypes.byref(_lib.moe_parallel(None, None, n))


def _fill_stats(stats, res):
    st = res.get("stats")
    if st is None:
        return
    for i, name in enumerate(_PHASES):
        stats[name] = stats.get(name, 0.0) + st.seconds[i]


def _make_call(ex, x, dtype, out, act, alpha, limit, shared, shared_gate, rsf, chunk_tokens, stats):
    """A moe_call for experts ex over x (everything but the routing); returns (call, arrays to keep
    alive, info: lead shape, a result() closure)."""
    x0 = np.asarray(x)
    t, xa, ml = _np_to_dtype(x0, dtype, "x")
    if xa.ndim < 1 or xa.shape[-1] != ex.K:
        raise ValueError("x has shape %s: its last axis must be K = %d" % (x0.shape, ex.K))
    lead = tuple(xa.shape[:-1])
    M = int(np.prod(lead, dtype=np.int64))
    x2 = xa.reshape(M, ex.K)
    odt = _out_dtype(t)
    if out is None:
        o2 = np.empty((M, ex.K), odt)
        ret = o2
    else:
        ret = out
        if not isinstance(out, np.ndarray):
            raise TypeError("out must be a numpy array")
        ov = out.view(np.uint16) if (_ML_BF16 is not None and out.dtype == _ML_BF16) else out
        if t == DType.F16 and ov.dtype == np.uint16:
            ov = ov.view(np.float16)
        if ov.dtype != odt or out.shape != x0.shape:
            raise ValueError("out must be a %s array of shape %s" % (np.dtype(odt), x0.shape))
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("out must be C-contiguous and writeable")
        o2 = ov.reshape(M, ex.K)
    call = _lib.moe_call()
    call.x, call.out, call.dtype, call.M = _ptr(x2), _ptr(o2), int(t), M
    call.act = int(Activation.parse(act))
    call.alpha = 0.0 if alpha is None else float(alpha)
    call.limit = 0.0 if limit is None else float(limit)
    call.routed_scaling_factor = 0.0 if rsf is None else float(rsf)
    call.chunk_tokens = 0 if chunk_tokens is None else int(chunk_tokens)
    keep = [x2, o2]
    if shared is not None:
        if not isinstance(shared, Experts):
            raise TypeError("shared must be a moeh.Experts (E = 1), not %s" % type(shared).__name__)
        shared._check_pack()
        call.shared = shared._addr
        keep.append(shared)
    if shared_gate is not None:
        if shared is None:
            raise ValueError("shared_gate needs a shared expert")
        sg = _float32(shared_gate, "shared_gate", (ex.K,))
        call.shared_gate = _ptr(sg)
        keep.append(sg)
    info = {"lead": lead}
    if stats is not None:
        if not isinstance(stats, dict):
            raise TypeError("stats must be a dict")
        st = _lib.moe_stats()
        st.clock = _OMP_WTIME if _OMP_WTIME else ctypes.cast(_PY_CLOCK, ctypes.c_void_p).value
        call.stats = ctypes.pointer(st)
        info["stats"] = st
        keep.append(st)

    def result():
        if out is not None:
            return ret
        r = o2.reshape(lead + (ex.K,))
        return r.view(_ML_BF16) if ml else r

    info["result"] = result
    return call, keep, info


def fused_experts(experts, x, topk_weights, topk_ids, **kw):
    """experts(x, topk_weights, topk_ids, **kw): moe_fused_experts (see Experts.__call__)."""
    if not isinstance(experts, Experts):
        raise TypeError("experts must be a moeh.Experts")
    return experts(x, topk_weights, topk_ids, **kw)


def shared_expert(shared, x, routed=None, *, shared_gate=None, act="silu", alpha=None, limit=None,
                  routed_scaling_factor=None, dtype=None, out=None, threads=None, chunk_tokens=None, stats=None):
    """The shared expert alone (moe_shared_expert): out = gate(x) * shared(x) + routed_scaling_factor *
    routed, where routed (x's shape and the call's dtype, or None for 0) was computed elsewhere."""
    if not isinstance(shared, Experts):
        raise TypeError("shared must be a moeh.Experts")
    shared._check_pack()
    call, keep, res = _make_call(shared, x, dtype, out, act, alpha, limit, None, None, routed_scaling_factor,
                                 chunk_tokens, stats)
    if shared_gate is not None:
        sg = _float32(shared_gate, "shared_gate", (shared.K,))
        call.shared_gate = _ptr(sg)
        keep.append(sg)
    r = None
    if routed is not None:
        rt, r, _ = _np_to_dtype(routed, DType(call.dtype), "routed")
        if r.shape != tuple(res["lead"]) + (shared.K,):
            raise ValueError("routed has shape %s, expected %s" % (r.shape, tuple(res["lead"]) + (shared.K,)))
        keep.append(r)
    nb = ctypes.c_size_t(0)
    _check(_L.moe_shared_expert_workspace_size(shared._addr, ctypes.byref(call), ctypes.byref(nb)),
           "moe_shared_expert_workspace_size")
    ws = shared._workspace(nb.value)
    _check(_L.moe_shared_expert(shared._addr, ctypes.byref(call), _ptr(r), _ptr(ws), ws.nbytes, _parallel(threads)),
           "moe_shared_expert")
    _fill_stats(stats, res)
    return res["result"]()


# ---- routing ------------------------------------------------------------------------------------------


class Router:
    """moe_router: E experts, topk per token; kind "softmax" | "sigmoid" | "grouped" | "biased_grouped";
    renormalize divides the chosen weights by their sum; routed_scaling_factor multiplies them; grouped
    kinds: n_group groups (dividing E), topk_group kept; biased_grouped needs correction_bias [E]."""

    def __init__(self, E, topk, kind="softmax", *, renormalize=False, n_group=0, topk_group=0,
                 routed_scaling_factor=None, correction_bias=None):
        self.E, self.topk, self.kind = int(E), int(topk), RouteKind.parse(kind)
        self.renormalize = bool(renormalize)
        self.n_group, self.topk_group = int(n_group), int(topk_group)
        self.routed_scaling_factor = 0.0 if routed_scaling_factor is None else float(routed_scaling_factor)
        self.correction_bias = None
        if correction_bias is not None:
            self.correction_bias = _float32(correction_bias, "correction_bias", (self.E,))
        r = _lib.moe_router()
        r.E, r.topk, r.kind = self.E, self.topk, int(self.kind)
        r.n_group, r.topk_group, r.renormalize = self.n_group, self.topk_group, int(self.renormalize)
        r.routed_scaling_factor = self.routed_scaling_factor
        r.correction_bias = _ptr(self.correction_bias)
        self._r = r

    def __repr__(self):
        return "moeh.Router(E=%d, topk=%d, kind=%s%s)" % (self.E, self.topk, self.kind.label,
                                                          ", renormalize" if self.renormalize else "")

    def _logits(self, logits, dtype):
        t, lg, _ = _np_to_dtype(logits, dtype, "logits")
        if lg.ndim < 1 or lg.shape[-1] != self.E:
            raise ValueError("logits have shape %s: the last axis must be E = %d" % (lg.shape, self.E))
        return t, lg

    def route(self, logits, dtype=None, threads=None):
        """logits [..., E] (float32, float16 or bf16 bits) -> (weights float32 [..., topk], ids int32
        [..., topk]), best first; on `threads` threads (moe_route_parallel; None: OpenMP's default),
        the same bits for any count."""
        t, lg = self._logits(logits, dtype)
        lead = lg.shape[:-1]
        M = int(np.prod(lead, dtype=np.int64))
        if self.topk < 1:  # the library names the problem (MOE_ERR_SHAPE) before it writes anything
            w, ids = np.empty(1, np.float32), np.empty(1, np.int32)
        else:
            w = np.empty(lead + (self.topk,), np.float32)
            ids = np.empty(lead + (self.topk,), np.int32)
        _check(_L.moe_route_parallel(ctypes.byref(self._r), _ptr(lg), int(t), M, _ptr(w), _ptr(ids), _parallel(threads)),
               "moe_route")
        return w, ids


def route(logits, topk, kind="softmax", *, renormalize=False, n_group=0, topk_group=0, routed_scaling_factor=None,
          correction_bias=None, dtype=None, threads=None):
    """Routes logits [..., E] to (weights float32 [..., topk], ids int32 [..., topk]) (moe_route_parallel)."""
    lg = np.asarray(logits)
    if lg.ndim < 1:
        raise ValueError("logits must be [..., E]")
    r = Router(lg.shape[-1], topk, kind, renormalize=renormalize, n_group=n_group, topk_group=topk_group,
               routed_scaling_factor=routed_scaling_factor, correction_bias=correction_bias)
    return r.route(lg, dtype, threads)


def forward(experts, router, logits, x, *, logits_dtype=None, act="silu", alpha=None, limit=None, shared=None,
            shared_gate=None, routed_scaling_factor=None, expert_map=None, n_global=None, dtype=None, out=None,
            threads=None, chunk_tokens=None, stats=None):
    """Routes logits [..., E] with router (a moeh.Router) and runs the experts on x [..., K] in one call
    (moe_forward). The keyword arguments are those of Experts.__call__; logits_dtype reads uint16 logits
    as "bf16" (default) or "fp16"."""
    if not isinstance(experts, Experts):
        raise TypeError("experts must be a moeh.Experts")
    if not isinstance(router, Router):
        raise TypeError("router must be a moeh.Router")
    experts._check_pack()
    call, keep, res = _make_call(experts, x, dtype, out, act, alpha, limit, shared, shared_gate,
                                 routed_scaling_factor, chunk_tokens, stats)
    lt, lg = router._logits(logits, logits_dtype)
    if lg.shape[:-1] != res["lead"]:
        raise ValueError("logits have shape %s, expected %s + (E,)" % (lg.shape, res["lead"]))
    keep += [lg, router]
    call.topk = router.topk
    _expert_map(call, expert_map, n_global, keep)
    nb = ctypes.c_size_t(0)
    _check(_L.moe_forward_workspace_size(experts._addr, ctypes.byref(router._r), ctypes.byref(call), ctypes.byref(nb)),
           "moe_forward_workspace_size")
    ws = experts._workspace(nb.value)
    _check(_L.moe_forward(experts._addr, ctypes.byref(router._r), _ptr(lg), int(lt), ctypes.byref(call), _ptr(ws),
                          ws.nbytes, _parallel(threads)), "moe_forward")
    _fill_stats(stats, res)
    return res["result"]()


# ---- kernel tiers --------------------------------------------------------------------------------------


def set_isa(cap):
    """Caps the kernel tier (moe_set_isa): "scalar", "avx512", ... or None to lift the cap. Returns the
    name of the tier that will run. Process-wide (it is libmoe's)."""
    c = len(Isa) if cap is None else int(Isa.parse(cap))
    return Isa(_L.moe_set_isa(c)).label


def get_isa():
    """The name of the best tier the cap, the build and this CPU allow."""
    return Isa(_L.moe_get_isa()).label


def isa_available(isa):
    """Whether kernels of that tier are compiled in and run on this CPU."""
    return bool(_L.moe_isa_available(int(Isa.parse(isa))))


def cpu_features():
    """The MOE_CPU_* bits of this CPU (moe_cpu_features)."""
    return int(_L.moe_cpu_features())


def kernel(precision):
    """The kernel pair a call of that precision runs now (moe_gemm_select), as a dict, or None when the
    precision is compiled out."""
    k = _L.moe_gemm_select(int(Precision.parse(precision)))
    if not k:
        return None
    k = k.contents
    return {"name": k.name.decode(), "isa": Isa(k.isa).label, "dot": k.dot.decode(),
            "gemm1": k.gemm1_name.decode(), "gemm2": k.gemm2_name.decode(),
            "tile": (k.mr, k.nr, k.kr), "tile2": (k.mr2, k.nr2)}
