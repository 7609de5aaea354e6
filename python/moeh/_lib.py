"""libmoe through ctypes: finding the library, the C structs and the function prototypes.

Private: the public API is in moeh/__init__.py. The structs mirror moe.h, moe_quant.h, moe_route.h
and moe_gemm.h field for field (x86-64 System V layout; the C enums are ints). moe_experts is not
mirrored: it is held as an opaque block of moe_experts_size() bytes.
"""

import ctypes
import ctypes.util
import os

c_int = ctypes.c_int
c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
c_uint8 = ctypes.c_uint8
c_uint16 = ctypes.c_uint16
c_uint32 = ctypes.c_uint32
c_size_t = ctypes.c_size_t
c_float = ctypes.c_float
c_double = ctypes.c_double
c_void_p = ctypes.c_void_p
c_char_p = ctypes.c_char_p
POINTER = ctypes.POINTER

MOE_PHASE_COUNT = 6


class moe_weights(ctypes.Structure):
    """moe_quant.h: plain weights."""

    _fields_ = [
        ("E", c_int64),
        ("N", c_int64),
        ("K", c_int64),
        ("precision", c_int),
        ("w13", c_void_p),
        ("w2", c_void_p),
        ("w13_scale", c_void_p),  # const float *
        ("w2_scale", c_void_p),
        ("w13_zero", c_void_p),  # const uint8_t *
        ("w2_zero", c_void_p),
        ("w13_e8m0", c_void_p),  # const uint8_t *
        ("w2_e8m0", c_void_p),
        ("b13", c_void_p),  # const float *
        ("b2", c_void_p),
        ("block_n", c_int32),
        ("block_k", c_int32),
        ("group", c_int32),
    ]


class moe_router(ctypes.Structure):
    """moe_route.h: routing configuration."""

    _fields_ = [
        ("E", c_int32),
        ("topk", c_int32),
        ("kind", c_int),
        ("n_group", c_int32),
        ("topk_group", c_int32),
        ("renormalize", c_int32),
        ("routed_scaling_factor", c_float),
        ("correction_bias", c_void_p),  # const float *
    ]


CLOCK_FN = ctypes.CFUNCTYPE(c_double)


class moe_stats(ctypes.Structure):
    """moe.h: optional per-phase wall time."""

    _fields_ = [
        ("clock", c_void_p),  # double (*)(void)
        ("seconds", c_double * MOE_PHASE_COUNT),
    ]


class moe_call(ctypes.Structure):
    """moe.h: one call's tensors and options."""

    _fields_ = [
        ("x", c_void_p),
        ("out", c_void_p),
        ("dtype", c_int),
        ("M", c_int64),
        ("ldx", c_int64),
        ("ldo", c_int64),
        ("topk", c_int32),
        ("topk_weights", c_void_p),  # const float *
        ("topk_ids", c_void_p),  # const int32_t *
        ("expert_map", c_void_p),  # const int32_t *
        ("n_global", c_int32),
        ("act", c_int),
        ("alpha", c_float),
        ("limit", c_float),
        ("routed_scaling_factor", c_float),
        ("shared", c_void_p),  # const moe_experts *
        ("shared_gate", c_void_p),  # const float *
        ("chunk_tokens", c_int64),
        ("stats", POINTER(moe_stats)),
    ]


class moe_parallel(ctypes.Structure):
    """moe.h: a caller's thread pool; here only n_threads is set (parallel_for NULL: OpenMP)."""

    _fields_ = [
        ("parallel_for", c_void_p),
        ("pool", c_void_p),
        ("n_threads", c_int),
    ]


class moe_gemm_config(ctypes.Structure):
    """moe_gemm.h: one row of the kernel list (read only)."""

    _fields_ = [
        ("gemm1", c_void_p),
        ("gemm2", c_void_p),
        ("cpu_features", c_uint32),
        ("isa", c_int),
        ("name", c_char_p),
        ("precision", c_int),
        ("mr", c_int32),
        ("nr", c_int32),
        ("kr", c_int32),
        ("mr2", c_int32),
        ("nr2", c_int32),
        ("gemm1_name", c_char_p),
        ("gemm2_name", c_char_p),
        ("dot", c_char_p),
    ]


# The sizes the headers give on x86-64 (checked by tests/python/test_moeh.py against offsetof()).
STRUCT_SIZES = {
    "moe_weights": 128,
    "moe_router": 40,
    "moe_stats": 56,
    "moe_call": 136,
    "moe_parallel": 24,
    "moe_gemm_config": 80,
}

_status = c_int
_P = c_void_p

# name: (restype, argtypes)
_PROTOTYPES = {
    "moe_version": (c_char_p, []),
    "moe_status_str": (c_char_p, [_status]),
    "moe_precision_name": (c_char_p, [c_int]),
    "moe_precision_compiled": (c_int, [c_int]),
    "moe_convert_to_f32": (None, [c_int, _P, _P, c_size_t]),
    "moe_convert_from_f32": (None, [c_int, _P, _P, c_size_t]),
    "moe_quantize_row_u8": (c_float, [_P, c_int64, _P]),
    "moe_quantize_weight_int8": (None, [_P, c_int64, c_int64, c_int64, _P, _P]),
    "moe_quantize_weight_fp8": (None, [_P, c_int64, c_int64, c_int64, c_int, c_int, _P, _P]),
    "moe_quantize_weight_int4": (None, [_P, c_int64, c_int64, c_int64, c_int, _P, _P, _P]),
    "moe_quantize_weight_mxfp4": (None, [_P, c_int64, c_int64, c_int64, _P, _P]),
    "moe_deinterleave_gate_up": (_status, [_P, _P, c_int64, c_int64, c_size_t]),
    "moe_import_fp8_block": (_status, [_P, _P, c_int64, c_int64, c_int32, c_int32, _P, _P, c_int64, c_int64]),
    "moe_import_fp8_block_rows": (_status, [_P, _P, c_int64, c_int64, c_int32, c_int32, c_int32, _P, _P, c_int64, c_int64]),
    "moe_import_awq": (_status, [_P, _P, _P, c_int, c_int64, c_int64, c_int32, _P, _P, _P, c_int64, c_int64]),
    "moe_import_gptq": (
        _status,
        [_P, _P, _P, c_int, _P, c_int32, c_int64, c_int64, c_int32, _P, _P, _P, c_int64, c_int64],
    ),
    "moe_import_mxfp4": (_status, [_P, _P, c_int64, c_int64, c_int, _P, _P, c_int64, c_int64]),
    "moe_import_bias": (_status, [_P, c_int, c_int64, c_int, _P]),
    "moe_route": (_status, [POINTER(moe_router), _P, c_int, c_int64, _P, _P]),
    "moe_route_parallel": (_status, [POINTER(moe_router), _P, c_int, c_int64, _P, _P, POINTER(moe_parallel)]),
    "moe_expert_map_contiguous": (_status, [c_int32, c_int32, c_int32, _P, _P]),
    "moe_experts_size": (c_size_t, []),
    "moe_pack_size": (c_size_t, [POINTER(moe_weights)]),
    "moe_pack": (_status, [POINTER(moe_weights), _P, _P, c_size_t]),
    "moe_pack_parallel": (_status, [POINTER(moe_weights), _P, _P, c_size_t, POINTER(moe_parallel)]),
    "moe_workspace_size": (_status, [_P, POINTER(moe_call), POINTER(c_size_t)]),
    "moe_fused_experts": (_status, [_P, POINTER(moe_call), _P, c_size_t, POINTER(moe_parallel)]),
    "moe_shared_expert": (_status, [_P, POINTER(moe_call), _P, _P, c_size_t, POINTER(moe_parallel)]),
    "moe_shared_expert_workspace_size": (_status, [_P, POINTER(moe_call), POINTER(c_size_t)]),
    "moe_forward_workspace_size": (_status, [_P, POINTER(moe_router), POINTER(moe_call), POINTER(c_size_t)]),
    "moe_forward": (
        _status,
        [_P, POINTER(moe_router), _P, c_int, POINTER(moe_call), _P, c_size_t, POINTER(moe_parallel)],
    ),
    "moe_set_isa": (c_int, [c_int]),
    "moe_get_isa": (c_int, []),
    "moe_isa_available": (c_int, [c_int]),
    "moe_isa_name": (c_char_p, [c_int]),
    "moe_cpu_features": (c_uint32, []),
    "moe_kernel_count": (c_int, []),
    "moe_kernel_at": (POINTER(moe_gemm_config), [c_int]),
    "moe_gemm_select": (POINTER(moe_gemm_config), [c_int]),
}


def _candidates():
    """Where to look for libmoe, in order: $MOEH_LIBMOE; the library installed beside this package
    (found relative to it, so a staged or relocated install finds its own); the path configured at
    install time; the loader's search (ctypes.util.find_library)."""
    env = os.environ.get("MOEH_LIBMOE")
    if env:
        return [("MOEH_LIBMOE", env)], True
    out = []
    try:
        from . import _config  # written by meson at install time
    except ImportError:
        _config = None
    if _config is not None:
        here = os.path.dirname(os.path.abspath(__file__))
        lib, pkgdir = getattr(_config, "LIBMOE", ""), getattr(_config, "PKGDIR", "")
        if lib and pkgdir and os.path.isabs(lib) and os.path.isabs(pkgdir):
            rel = os.path.normpath(os.path.join(here, os.path.relpath(lib, pkgdir)))
            out.append(("installed beside moeh", rel))
        if lib:
            out.append(("configured at install", lib))
    found = ctypes.util.find_library("moe")
    if found:
        out.append(("find_library('moe')", found))
    return out, False


def load():
    """Loads libmoe and declares its prototypes; raises ImportError naming every place tried."""
    cands, forced = _candidates()
    tried = []
    for how, path in cands:
        if not forced and os.path.isabs(path) and not os.path.exists(path):
            tried.append("%s: %s (missing)" % (how, path))
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s: %s (%s)" % (how, path, e))
            if forced:
                break
            continue
        missing = [n for n in _PROTOTYPES if not hasattr(lib, n)]
        if missing:
            tried.append("%s: %s (not libmoe, or too old: no %s)" % (how, path, ", ".join(missing[:3])))
            if forced:
                break
            continue
        for name, (res, args) in _PROTOTYPES.items():
            f = getattr(lib, name)
            f.restype = res
            f.argtypes = args
        return lib, path
    raise ImportError(
        "moeh: cannot load libmoe ("
        + ("; ".join(tried) if tried else "no candidate: set MOEH_LIBMOE to the path of libmoe.so")
        + ")"
    )


def omp_wtime(lib):
    """The address of omp_get_wtime when libmoe links OpenMP (dlsym searches the library's
    dependencies), else None: a clock for moe_stats that needs no Python callback."""
    try:
        f = lib.omp_get_wtime
    except AttributeError:
        return None
    return ctypes.cast(f, c_void_p).value
