#!/usr/bin/env python3
"""Seed corpora for the checkpoint fuzz targets (tests/fuzz/corpus/<target>/), plain python3.

    python3 tests/fuzz/make_seeds.py            # (re)writes tests/fuzz/corpus/
    python3 tests/fuzz/make_seeds.py --check    # exits 1 if the committed corpus differs

Every seed is < 4 KB and deterministic (no randomness, no timestamps).

Formats, as written here:
  safetensors  https://github.com/huggingface/safetensors README.md "Format": 8 bytes N (u64 LE), N bytes
               of a JSON object that starts with '{' and MAY be trailing padded with spaces (0x20);
               {"NAME": {"dtype", "shape", "data_offsets": [BEGIN, END]}} with offsets relative to the
               byte buffer after the header; optional "__metadata__" string-to-string map; the buffer is
               entirely indexed, no holes. Dtype names: safetensors/src/tensor.rs enum Dtype.
  GGUF         https://github.com/ggml-org/ggml docs/gguf.md: magic "GGUF", u32 version, u64 tensor_count,
               u64 metadata_kv_count (v2 made the counts u64; v3 only adds big-endian files), KVs
               (gguf_string_t key = u64 len + bytes, u32 value type, value), tensor infos (name, u32
               n_dims, u64 ne[n_dims] with ne[0] contiguous, u32 ggml_type, u64 offset relative to the
               data section, a multiple of ALIGNMENT), padding to general.alignment (u32, default 32),
               tensor data. Value types 0..12 and ggml_type F32=0 F16=1 Q4_0=2 Q8_0=8 BF16=30 MXFP4=39
               from the same document. Block sizes from ggml/src/ggml-common.h: block_q4_0 (f16 d +
               16 bytes) = 18, block_q8_0 (f16 d + 32 int8) = 34, block_mxfp4 (e8m0 + 16 bytes) = 17, 32
               elements each. Metadata keys: llama.cpp gguf-py/gguf/constants.py (Keys.LLM,
               MODEL_ARCH_NAMES "llama" "qwen2moe" "qwen3moe" "deepseek2" "gpt-oss", TENSOR_NAMES
               blk.{bid}.ffn_*_exps, ffn_gate_inp, *_shexp, exp_probs_b; ExpertGatingFuncType SOFTMAX=1
               SIGMOID=2).
  config.json  transformers configuration_{mixtral,qwen2_moe,qwen3_moe,deepseek_v3,gpt_oss}.py field names;
               values shaped after the published configs (mistralai/Mixtral-8x7B-v0.1, Qwen/Qwen1.5-MoE-A2.7B,
               Qwen/Qwen3-30B-A3B, deepseek-ai/DeepSeek-V3 with its fp8 quantization_config, openai/gpt-oss-20b
               with quant_method mxfp4) and the AWQ (quant_method awq, version gemm) and GPTQ (quant_method
               gptq, checkpoint_format gptq / gptq_v2, desc_act) quantization_config blocks.
  index        model.safetensors.index.json: {"metadata": {"total_size": N}, "weight_map": {tensor: shard}}.
"""
import json
import os
import shutil
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_SEED = 4096


# ---------------------------------------------------------------------------------------------- helpers
def pattern(n, salt=0):
    """n deterministic bytes (not all zero, so a touched range shows in a dump)."""
    return bytes(((i * 131 + salt * 17 + 7) ^ (i >> 3)) & 0xFF for i in range(n))


def f32(vals):
    return b"".join(struct.pack("<f", v) for v in vals)


def f16(v):
    return struct.pack("<e", v)


# ---------------------------------------------------------------------------------------------- safetensors
ST_SIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
            "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}


def safetensors(tensors, metadata=None, pad_to=8, extra_pad=0):
    """tensors: list of (name, dtype, shape[, data]). Offsets laid out back to back (no holes)."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    buf = b""
    for t in tensors:
        name, dtype, shape = t[0], t[1], t[2]
        n = 1
        for d in shape:
            n *= d
        nbytes = n * ST_SIZE[dtype]
        data = t[3] if len(t) > 3 else pattern(nbytes, len(buf))
        assert len(data) == nbytes, name
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(buf), len(buf) + nbytes]}
        buf += data
    return st_raw(json.dumps(header, separators=(",", ":")).encode(), buf, pad_to, extra_pad)


def st_raw(hjson, buf, pad_to=8, extra_pad=0):
    """Header text padded with spaces to a multiple of pad_to (plus extra_pad spaces)."""
    if pad_to:
        hjson += b" " * ((-len(hjson)) % pad_to)
    hjson += b" " * extra_pad
    return struct.pack("<Q", len(hjson)) + hjson + buf


def safetensors_seeds():
    s = {}
    # Every dtype the brief names, with __metadata__, header padded with spaces.
    s["dtypes_meta.safetensors"] = safetensors([
        ("a.bf16", "BF16", [4, 8]),
        ("b.f16", "F16", [2, 8]),
        ("c.f32", "F32", [3, 5], f32([0.5 * i - 3 for i in range(15)])),
        ("d.f8", "F8_E4M3", [8, 4]),
        ("e.u8", "U8", [7]),
        ("f.i32", "I32", [2, 2, 3]),
    ], metadata={"format": "pt"})
    # Without __metadata__; one MoE layer (Qwen3-MoE names: model.layers.N.mlp.gate / experts.E.*_proj).
    K, N, E = 16, 8, 2
    ts = [("model.layers.0.mlp.gate.weight", "BF16", [E, K])]
    for e in range(E):
        for proj, shp in (("gate_proj", [N, K]), ("up_proj", [N, K]), ("down_proj", [K, N])):
            ts.append(("model.layers.0.mlp.experts.%d.%s.weight" % (e, proj), "BF16", shp))
    s["qwen3_moe_layer.safetensors"] = safetensors(ts, metadata=None)
    # Mixtral names: block_sparse_moe.gate, experts.J.w1 (gate) / w3 (up) [N, K], w2 (down) [K, N].
    ts = [("model.layers.1.block_sparse_moe.gate.weight", "BF16", [2, 16])]
    for e in range(2):
        ts += [("model.layers.1.block_sparse_moe.experts.%d.w1.weight" % e, "BF16", [8, 16]),
               ("model.layers.1.block_sparse_moe.experts.%d.w2.weight" % e, "BF16", [16, 8]),
               ("model.layers.1.block_sparse_moe.experts.%d.w3.weight" % e, "BF16", [8, 16])]
    s["mixtral_layer.safetensors"] = safetensors(ts, metadata={"format": "pt"})
    # DeepSeek-V3 fp8: weight F8_E4M3 [N, K] + weight_scale_inv F32 [ceil(N/128), ceil(K/128)].
    s["fp8_blocks.safetensors"] = safetensors([
        ("model.layers.3.mlp.experts.0.gate_proj.weight", "F8_E4M3", [16, 32]),
        ("model.layers.3.mlp.experts.0.gate_proj.weight_scale_inv", "F32", [1, 1], f32([0.125])),
        ("model.layers.3.mlp.gate.e_score_correction_bias", "F32", [4], f32([0.1, -0.2, 0.3, 0.0])),
    ], metadata={"format": "pt"})
    # AWQ / GPTQ int4 packing: qweight I32, qzeros I32, scales F16 (group 32 here).
    s["awq_int4.safetensors"] = safetensors([
        ("model.layers.0.mlp.experts.0.up_proj.qweight", "I32", [32, 2]),
        ("model.layers.0.mlp.experts.0.up_proj.qzeros", "I32", [1, 2]),
        ("model.layers.0.mlp.experts.0.up_proj.scales", "F16", [1, 16]),
        ("model.layers.0.mlp.experts.0.up_proj.g_idx", "I32", [32]),
    ], metadata={"format": "pt", "quant": "awq"})
    # gpt-oss mxfp4: blocks U8 [E, N, K/32, 16], scales U8 [E, N, K/32], biases BF16.
    s["gpt_oss_mxfp4.safetensors"] = safetensors([
        ("model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", [2, 4, 1, 16]),
        ("model.layers.0.mlp.experts.gate_up_proj_scales", "U8", [2, 4, 1], bytes([127, 126, 128, 125] * 2)),
        ("model.layers.0.mlp.experts.gate_up_proj_bias", "BF16", [2, 4]),
        ("model.layers.0.mlp.router.weight", "BF16", [2, 32]),
        ("model.layers.0.mlp.router.bias", "BF16", [2]),
    ], metadata={"format": "pt"})
    # A scalar (rank 0), an empty tensor (a 0 dimension: no bytes), every other dtype, big padding.
    s["scalar_empty_alldtypes.safetensors"] = safetensors([
        ("scalar", "F32", [], f32([1.5])),
        ("empty", "BF16", [0, 4], b""),
        ("g.bool", "BOOL", [3], b"\x00\x01\x01"),
        ("h.i8", "I8", [2]), ("i.i16", "I16", [2]), ("j.u16", "U16", [2]), ("k.u32", "U32", [1]),
        ("l.i64", "I64", [1]), ("m.u64", "U64", [1]), ("n.f64", "F64", [1]), ("o.f8e5", "F8_E5M2", [2]),
    ], metadata={}, extra_pad=64)
    s["empty_header.safetensors"] = st_raw(b"{}", b"")
    # ---- malformed ----
    good = s["dtypes_meta.safetensors"]
    s["bad_truncated_data.safetensors"] = good[:-9]
    s["bad_truncated_header.safetensors"] = good[:40]
    s["bad_short_len.safetensors"] = good[:5]
    hdr = b'{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},' \
          b'"b":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]}}'
    s["bad_overlap.safetensors"] = st_raw(hdr, pattern(24))
    hdr = b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}'
    s["bad_reversed_offsets.safetensors"] = st_raw(hdr, pattern(8))
    hdr = b'{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}'
    s["bad_offsets_past_end.safetensors"] = st_raw(hdr, pattern(12))
    hdr = b'{"a":{"dtype":"F32","shape":[3,2],"data_offsets":[0,16]}}'
    s["bad_shape_vs_bytes.safetensors"] = st_raw(hdr, pattern(16))
    hdr = b'{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}}'
    s["bad_shape_overflow.safetensors"] = st_raw(hdr, pattern(16))
    hdr = b'{"a":{"dtype":"F32","shape":[-1,-4],"data_offsets":[0,16]}}'
    s["bad_negative_shape.safetensors"] = st_raw(hdr, pattern(16))
    hdr = b'{"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}}'
    s["bad_nine_dims.safetensors"] = st_raw(hdr, pattern(4))
    hdr = b'{"a":{"dtype":"Q4_K","shape":[2],"data_offsets":[0,4]}}'
    s["bad_dtype.safetensors"] = st_raw(hdr, pattern(4))
    hdr = b'{"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,1e300]}}'
    s["bad_float_numbers.safetensors"] = st_raw(hdr, pattern(8))
    hdr = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
    s["bad_duplicate_key.safetensors"] = st_raw(hdr, pattern(8))
    hdr = b'{"__metadata__":{"format":3},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    s["bad_metadata_value.safetensors"] = st_raw(hdr, pattern(1))
    s["bad_not_object.safetensors"] = st_raw(b'[1,2,3]', b"")
    s["bad_leading_space.safetensors"] = st_raw(b' {}', b"")
    s["bad_header_len_huge.safetensors"] = struct.pack("<Q", 0x7FFFFFFFFFFFFFFF) + b"{}"
    s["bad_header_len_max.safetensors"] = struct.pack("<Q", 0xFFFFFFFFFFFFFFFF) + b"{}      "
    hdr = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    s["bad_hole.safetensors"] = st_raw(hdr, pattern(12))
    hdr = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}}'
    s["bad_gap.safetensors"] = st_raw(hdr, pattern(8))
    hdr = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551616]}}'
    s["bad_offset_wrap.safetensors"] = st_raw(hdr, pattern(8))
    hdr = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}'
    s["bad_one_offset.safetensors"] = st_raw(hdr, pattern(4))
    hdr = b'{"a":{"dtype":"F32","shape":{},"data_offsets":"x"}}'
    s["bad_types.safetensors"] = st_raw(hdr, pattern(4))
    s["bad_nul_in_header.safetensors"] = st_raw(b'{"a\x00b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x")
    return s


# ---------------------------------------------------------------------------------------------- GGUF
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
T_F32, T_F16, T_Q4_0, T_Q8_0, T_BF16, T_MXFP4, T_Q4_K = 0, 1, 2, 8, 30, 39, 12
# (block elements, block bytes) per ggml_type
GG_BLOCK = {T_F32: (1, 4), T_F16: (1, 2), T_BF16: (1, 2), T_Q4_0: (32, 18), T_Q8_0: (32, 34),
            T_MXFP4: (32, 17), T_Q4_K: (256, 144)}  # block_q4_K: 2 f16 + 12 scale bytes + 128


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", U64: "<Q",
              I64: "<q", F64: "<d"}


def gval(t, v):
    if t in SCALAR_FMT:
        return struct.pack(SCALAR_FMT[t], v)
    if t == BOOL:
        return struct.pack("<B", 1 if v else 0) if isinstance(v, bool) else struct.pack("<B", v)
    if t == STR:
        return gstr(v)
    if t == ARR:  # v = (element type, [elements])
        et, elems = v
        return struct.pack("<IQ", et, len(elems)) + b"".join(gval(et, e) for e in elems)
    raise ValueError(t)


def gkv(key, t, v):
    return gstr(key) + struct.pack("<I", t) + gval(t, v)


def tensor_bytes(gtype, ne):
    n = 1
    for d in ne:
        n *= d
    if gtype not in GG_BLOCK:  # a type unknown to the writer: no data
        return 0
    be, bb = GG_BLOCK[gtype]
    assert ne[0] % be == 0
    return n // be * bb


def gguf(kvs, tensors, version=3, alignment=None, count_override=None):
    """kvs: list of (key, type, value); tensors: list of (name, ggml_type, ne (ggml order: ne[0] contiguous)).
    general.alignment is written when alignment is given (else the default 32 applies)."""
    align = alignment or 32
    if alignment is not None:
        kvs = [("general.alignment", U32, alignment)] + list(kvs)
    infos, datas, off = b"", [], 0
    for i, (name, gtype, ne) in enumerate(tensors):
        nbytes = tensor_bytes(gtype, ne)
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", gtype, off)
        data = pattern(nbytes, i)
        datas.append(data + b"\x00" * ((-nbytes) % align))
        off += len(datas[-1])
    nt, nkv = (len(tensors), len(kvs)) if count_override is None else count_override
    head = b"GGUF" + struct.pack("<IQQ", version, nt, nkv) + b"".join(gkv(*kv) for kv in kvs) + infos
    head += b"\x00" * ((-len(head)) % align)
    out = head + b"".join(datas)
    return out


def all_value_types():
    """One KV of every GGUF value type, arrays of strings and nested arrays included."""
    return [
        ("test.u8", U8, 200), ("test.i8", I8, -5), ("test.u16", U16, 60000), ("test.i16", I16, -30000),
        ("test.u32", U32, 4000000000), ("test.i32", I32, -2000000000), ("test.f32", F32, 1.25),
        ("test.bool", BOOL, True), ("test.string", STR, "hello gguf"), ("test.u64", U64, 1 << 40),
        ("test.i64", I64, -(1 << 40)), ("test.f64", F64, 2.5),
        ("test.arr_str", ARR, (STR, ["a", "bc", "", "def"])),
        ("test.arr_i32", ARR, (I32, [1, -2, 3])),
        ("test.arr_f32", ARR, (F32, [0.5, 1.5])),
        ("test.arr_bool", ARR, (BOOL, [True, False])),
        ("test.arr_nested", ARR, (ARR, [(U8, [1, 2, 3]), (STR, ["x", "yz"]), (ARR, [(I64, [7])])])),
        ("test.arr_empty", ARR, (U32, [])),
    ]


def moe_kvs(arch, K, N, E, topk, layers=2, extra=()):
    return [("general.architecture", STR, arch), ("general.name", STR, "fuzz seed " + arch),
            ("general.quantization_version", U32, 2),
            (arch + ".block_count", U32, layers), (arch + ".embedding_length", U32, K),
            (arch + ".feed_forward_length", U32, min(4 * K, 0xFFFFFFFF)), (arch + ".expert_count", U32, E),
            (arch + ".expert_used_count", U32, topk), (arch + ".expert_feed_forward_length", U32, N)] + list(extra)


def moe_tensors(blk, K, N, E, wtype, shared=None, gate_inp_shexp=False, probs_b=False, biases=False, down=None):
    """GGUF ne order: ffn_gate_exps/ffn_up_exps ne = [K, N, E], ffn_down_exps ne = [N, K, E], ffn_gate_inp [K, E]."""
    p = "blk.%d." % blk
    ts = [(p + "ffn_gate_inp.weight", T_F32, [K, E]),
          (p + "ffn_gate_exps.weight", wtype, [K, N, E]),
          (p + "ffn_up_exps.weight", wtype, [K, N, E]),
          (p + "ffn_down_exps.weight", down or wtype, [N, K, E])]
    if biases:
        ts += [(p + "ffn_gate_inp.bias", T_F32, [E]), (p + "ffn_gate_exps.bias", T_F32, [N, E]),
               (p + "ffn_up_exps.bias", T_F32, [N, E]), (p + "ffn_down_exps.bias", T_F32, [K, E])]
    if shared:
        ts += [(p + "ffn_gate_shexp.weight", shared, [K, N]), (p + "ffn_up_shexp.weight", shared, [K, N]),
               (p + "ffn_down_shexp.weight", shared, [N, K])]
    if gate_inp_shexp:
        ts.append((p + "ffn_gate_inp_shexp.weight", T_F32, [K]))
    if probs_b:
        ts.append((p + "exp_probs_b.bias", T_F32, [E]))
    return ts


def gguf_seeds():
    s = {}
    # v3, alignment 32, every value type, every tensor type the brief names.
    s["v3_all_types_a32.gguf"] = gguf(
        all_value_types() + moe_kvs("qwen3moe", 32, 32, 2, 1),
        [("t.f32", T_F32, [32, 2]), ("t.f16", T_F16, [32, 2]), ("t.bf16", T_BF16, [32, 2]),
         ("t.q4_0", T_Q4_0, [64, 2]), ("t.q8_0", T_Q8_0, [32, 2]), ("t.mxfp4", T_MXFP4, [32, 4]),
         ("t.1d", T_F32, [3]), ("t.4d", T_F16, [2, 1, 2, 2])],
        version=3, alignment=32)
    # v2, alignment 64, the same.
    s["v2_all_types_a64.gguf"] = gguf(
        all_value_types() + moe_kvs("llama", 32, 32, 2, 1),
        [("t.f32", T_F32, [32, 1]), ("t.f16", T_F16, [64]), ("t.bf16", T_BF16, [32, 1]),
         ("t.q4_0", T_Q4_0, [32, 2]), ("t.q8_0", T_Q8_0, [32, 1]), ("t.mxfp4", T_MXFP4, [64, 1])],
        version=2, alignment=64)
    # No general.alignment: the default 32.
    s["v3_default_align.gguf"] = gguf(moe_kvs("llama", 32, 32, 2, 1),
                                      [("a", T_F32, [5]), ("b", T_Q8_0, [32])], version=3)
    s["v3_empty.gguf"] = gguf([], [], version=3)
    s["v2_no_tensors.gguf"] = gguf([("general.architecture", STR, "qwen3moe")], [], version=2)
    # Seeds stay < 4 KB: block types need K and N multiples of 32 (K = N = 32, one expert); the plain
    # types take K = 16, N = 8 and two or more experts.
    # Qwen3-MoE, Q4_0 experts.
    s["qwen3moe_q4_0.gguf"] = gguf(
        moe_kvs("qwen3moe", 32, 32, 1, 1, extra=[("qwen3moe.expert_weights_norm", BOOL, True)]),
        moe_tensors(1, 32, 32, 1, T_Q4_0), version=3, alignment=32)
    # Mixtral as GGUF "llama" with experts, Q4_0 gate/up and Q8_0 down (mixed, as Q4_K_M files mix), v2.
    s["mixtral_llama_q8_0.gguf"] = gguf(moe_kvs("llama", 32, 32, 1, 1),
                                        moe_tensors(0, 32, 32, 1, T_Q4_0, down=T_Q8_0),
                                        version=2, alignment=32)
    # Qwen2-MoE: shared expert with its sigmoid gate, F16 experts, v2, alignment 64.
    s["qwen2moe_f16_shexp.gguf"] = gguf(
        moe_kvs("qwen2moe", 16, 8, 2, 1, extra=[("qwen2moe.expert_shared_feed_forward_length", U32, 8)]),
        moe_tensors(0, 16, 8, 2, T_F16, shared=T_F16, gate_inp_shexp=True), version=2, alignment=64)
    # DeepSeek-V3 as "deepseek2": sigmoid gating, groups, scale, leading dense block, BF16 experts.
    s["deepseek2_bf16.gguf"] = gguf(
        moe_kvs("deepseek2", 16, 8, 2, 1, layers=2, extra=[
            ("deepseek2.leading_dense_block_count", U32, 1), ("deepseek2.expert_shared_count", U32, 1),
            ("deepseek2.expert_weights_scale", F32, 2.5), ("deepseek2.expert_weights_norm", BOOL, True),
            ("deepseek2.expert_gating_func", U32, 2), ("deepseek2.expert_group_count", U32, 2),
            ("deepseek2.expert_group_used_count", U32, 1)]),
        moe_tensors(1, 16, 8, 2, T_BF16, shared=T_BF16, probs_b=True), version=3, alignment=64)
    # gpt-oss: MXFP4 experts, router and expert biases.
    s["gpt_oss_mxfp4.gguf"] = gguf(
        moe_kvs("gpt-oss", 32, 32, 1, 1, extra=[("gpt-oss.expert_gating_func", U32, 1)]),
        moe_tensors(0, 32, 32, 1, T_MXFP4, biases=True), version=3, alignment=32)
    # Qwen3-MoE with F32 experts, 3 of them, two layers.
    s["qwen3moe_f32_2layers.gguf"] = gguf(
        moe_kvs("qwen3moe", 8, 4, 3, 2), moe_tensors(0, 8, 4, 3, T_F32) + moe_tensors(1, 8, 4, 3, T_F32),
        version=3, alignment=32)
    # The architecture keys in other value types than the writer's u32 (readers should take any integer
    # type, gguf.md: "Some models may use uint32 for their values; it is recommended that readers support
    # both"): u64, i64, u16, i8, f64, bool.
    s["deepseek2_typed_keys.gguf"] = gguf(
        [("general.architecture", STR, "deepseek2"), ("deepseek2.block_count", U64, 3),
         ("deepseek2.embedding_length", I64, 16), ("deepseek2.expert_count", U16, 4),
         ("deepseek2.expert_used_count", I8, 2), ("deepseek2.expert_feed_forward_length", I32, 8),
         ("deepseek2.expert_shared_count", U8, 2), ("deepseek2.expert_weights_scale", F64, 2.5),
         ("deepseek2.expert_weights_norm", U8, 1), ("deepseek2.expert_gating_func", I64, 2),
         ("deepseek2.expert_group_count", U32, 2), ("deepseek2.expert_group_used_count", U32, 1),
         ("deepseek2.leading_dense_block_count", U16, 1)],
        [("blk.1.ffn_gate_inp.weight", T_F32, [16, 4])], version=3, alignment=32)
    # A K-quant tensor (MOE_CKPT_OTHER: listed, never read).
    s["q4_k_other.gguf"] = gguf(moe_kvs("llama", 32, 32, 2, 1), [("q", T_Q4_K, [256, 1]), ("u", 99, [8])],
                                version=3, alignment=32)
    # ---- malformed ----
    good = s["qwen3moe_q4_0.gguf"]
    s["bad_truncated_data.gguf"] = good[:-100]
    s["bad_truncated_meta.gguf"] = s["v3_all_types_a32.gguf"][:300]
    s["bad_header_only.gguf"] = good[:20]
    s["bad_magic.gguf"] = b"GGUG" + good[4:]
    s["bad_version1.gguf"] = good[:4] + struct.pack("<I", 1) + good[8:]
    s["bad_version4.gguf"] = good[:4] + struct.pack("<I", 4) + good[8:]
    s["bad_tensor_count_huge.gguf"] = gguf([("general.architecture", STR, "llama")], [("a", T_F32, [4])],
                                           count_override=(1 << 62, 1))
    s["bad_kv_count_huge.gguf"] = gguf([("general.architecture", STR, "llama")], [("a", T_F32, [4])],
                                       count_override=(1, 0xFFFFFFFFFFFFFFFF))
    # Hand-built tensor infos: overlapping, out of range, unaligned, bad dims, bad type.
    def raw(kvs, infos, data, align=32, version=3, nt=None):
        head = b"GGUF" + struct.pack("<IQQ", version, len(infos) if nt is None else nt, len(kvs))
        head += b"".join(gkv(*kv) for kv in kvs)
        for name, gtype, ne, off in infos:
            head += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
            head += struct.pack("<IQ", gtype, off)
        head += b"\x00" * ((-len(head)) % align)
        return head + data
    # A valid MoE header (llama with experts), so that a reader that checks the architecture first
    # still reaches the tensor infos.
    arch = moe_kvs("llama", 32, 32, 2, 1)
    s["bad_overlap.gguf"] = raw(arch, [("a", T_F32, [16], 0), ("b", T_F32, [16], 32)], pattern(96))
    s["bad_offset_past_end.gguf"] = raw(arch, [("a", T_F32, [16], 64)], pattern(64))
    s["bad_offset_wrap.gguf"] = raw(arch, [("a", T_F32, [16], 0xFFFFFFFFFFFFFFE0)], pattern(64))
    s["bad_offset_unaligned.gguf"] = raw(arch, [("a", T_F32, [4], 4)], pattern(64))
    s["bad_ne_overflow.gguf"] = raw(arch, [("a", T_F32, [1 << 32, 1 << 32, 1 << 8], 0)], pattern(64))
    s["bad_ne_zero.gguf"] = raw(arch, [("a", T_F32, [0, 4], 0)], pattern(32))
    s["bad_ne_negative.gguf"] = raw(arch, [("a", T_F32, [0xFFFFFFFFFFFFFFFF], 0)], pattern(32))
    s["bad_n_dims_9.gguf"] = raw(arch, [("a", T_F32, [1] * 9, 0)], pattern(32))
    s["bad_n_dims_huge.gguf"] = b"GGUF" + struct.pack("<IQQ", 3, 1, len(arch)) + b"".join(gkv(*kv) for kv in arch) + gstr("a") + \
        struct.pack("<I", 0xFFFFFFFF) + pattern(40)
    s["bad_q4_0_not_32.gguf"] = raw(arch, [("a", T_Q4_0, [31, 1], 0)], pattern(32))
    s["bad_type_unknown.gguf"] = raw(arch, [("a", 99, [4], 0)], pattern(32))
    s["bad_type_removed4.gguf"] = raw(arch, [("a", 4, [32], 0)], pattern(32))
    s["bad_dup_tensor.gguf"] = raw(arch, [("a", T_F32, [8], 0), ("a", T_F32, [8], 32)], pattern(64))
    s["bad_align_0.gguf"] = raw([("general.alignment", U32, 0)] + arch, [("a", T_F32, [8], 0)], pattern(32))
    s["bad_align_3.gguf"] = raw([("general.alignment", U32, 3)] + arch, [("a", T_F32, [8], 0)], pattern(33), align=3)
    s["bad_align_type.gguf"] = raw([("general.alignment", STR, "32")] + arch, [("a", T_F32, [8], 0)], pattern(32))
    s["bad_align_huge.gguf"] = raw([("general.alignment", U32, 1 << 31)] + arch, [("a", T_F32, [8], 0)], pattern(32))
    s["bad_string_len_huge.gguf"] = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 62) + b"abc"
    s["bad_array_len_huge.gguf"] = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gstr("x") + \
        struct.pack("<IIQ", ARR, U64, 1 << 61) + pattern(16)
    s["bad_array_str_len_huge.gguf"] = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gstr("x") + \
        struct.pack("<IIQ", ARR, STR, 2) + gstr("ok") + struct.pack("<Q", 1 << 63)
    s["bad_value_type.gguf"] = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gstr("x") + struct.pack("<I", 13) + pattern(8)
    s["bad_bool_2.gguf"] = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gstr("x") + struct.pack("<IB", BOOL, 2)
    nested = struct.pack("<IQ", ARR, 1) * 200 + struct.pack("<IQ", U8, 1) + b"\x01"
    s["bad_deep_nesting.gguf"] = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gstr("x") + struct.pack("<I", ARR) + nested
    s["bad_arch_type.gguf"] = gguf([("general.architecture", U32, 7), ("llama.expert_count", STR, "8")], [])
    # Huge counts: expert_shared_count x expert_feed_forward_length past int64 (deepseek2 multiplies them).
    s["bad_deepseek2_huge_keys.gguf"] = gguf(
        [("general.architecture", STR, "deepseek2"), ("deepseek2.expert_shared_count", U64, 999999999999999),
         ("deepseek2.expert_feed_forward_length", U64, 999999999999999),
         ("deepseek2.expert_weights_scale", F64, 1e300), ("deepseek2.expert_group_count", F64, float("nan")),
         ("deepseek2.block_count", F32, float("inf")), ("deepseek2.embedding_length", I64, -1)], [])
    s["bad_arch_counts.gguf"] = gguf(moe_kvs("qwen3moe", 1 << 31, 0, 0xFFFFFFFF, 1 << 20, layers=0xFFFFFFFF,
                                             extra=[("qwen3moe.expert_count", U64, 1 << 63)]), [])
    return s


# ---------------------------------------------------------------------------------------------- config.json
def config_seeds():
    c = {}
    mixtral = {
        "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
        "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
        "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
        "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
        "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.02, "sliding_window": None, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 32000}
    c["mixtral.json"] = mixtral
    qwen2 = {
        "architectures": ["Qwen2MoeForCausalLM"], "bos_token_id": 151643, "decoder_sparse_step": 1,
        "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 5632,
        "max_position_embeddings": 8192, "max_window_layers": 21, "model_type": "qwen2_moe",
        "moe_intermediate_size": 1408, "norm_topk_prob": False, "num_attention_heads": 16,
        "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 16,
        "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 5632, "sliding_window": 32768,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
        "use_sliding_window": False, "vocab_size": 151936}
    c["qwen2_moe.json"] = qwen2
    qwen3 = {
        "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
        "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
        "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [],
        "model_type": "qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": True,
        "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
        "num_key_value_heads": 4, "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_scaling": None,
        "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": None,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False,
        "vocab_size": 151936}
    c["qwen3_moe.json"] = qwen3
    c["qwen3_moe_mlp_only.json"] = dict(qwen3, mlp_only_layers=[0, 5, 47, 255], decoder_sparse_step=2)
    deepseek = {
        "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1,
        "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168, "initializer_range": 0.02,
        "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 163840,
        "model_type": "deepseek_v3", "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8,
        "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 128,
        "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
        "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                "weight_block_size": [128, 128]},
        "rms_norm_eps": 1e-06, "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
        "seq_aux": True, "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc",
        "torch_dtype": "bfloat16", "use_cache": True, "v_head_dim": 128, "vocab_size": 129280}
    c["deepseek_v3_fp8.json"] = deepseek
    gptoss = {
        "architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
        "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu",
        "hidden_size": 2880, "initial_context_length": 4096, "initializer_range": 0.02,
        "intermediate_size": 2880, "layer_types": ["sliding_attention", "full_attention"] * 12,
        "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64,
        "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32,
        "output_router_logits": False, "pad_token_id": 199999,
        "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                           "model.embed_tokens", "lm_head"],
                                "quant_method": "mxfp4"},
        "rms_norm_eps": 1e-05,
        "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                         "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
        "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
        "tie_word_embeddings": False, "transformers_version": "4.55.0.dev0", "use_cache": True,
        "vocab_size": 201088}
    c["gpt_oss_mxfp4.json"] = gptoss
    awq = {"bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq",
           "version": "gemm", "zero_point": True}
    c["qwen3_moe_awq.json"] = dict(qwen3, quantization_config=awq)
    gptq = {"bits": 4, "checkpoint_format": "gptq", "damp_percent": 0.01, "desc_act": False, "group_size": 128,
            "model_file_base_name": None, "model_name_or_path": None, "quant_method": "gptq",
            "static_groups": False, "sym": True, "true_sequential": True}
    c["mixtral_gptq.json"] = dict(mixtral, quantization_config=gptq)
    c["qwen2_moe_gptq_v2_actorder.json"] = dict(qwen2, quantization_config=dict(
        gptq, checkpoint_format="gptq_v2", desc_act=True, group_size=32))
    c["deepseek_v3_bf16.json"] = {k: v for k, v in deepseek.items() if k != "quantization_config"}
    out = {k: json.dumps(v, indent=2, sort_keys=True).encode() for k, v in c.items()}
    # ---- malformed ----
    out["bad_truncated.json"] = out["qwen3_moe.json"][:200]
    out["bad_empty_object.json"] = b"{}"
    out["bad_top_array.json"] = b'[{"model_type": "mixtral"}]'
    out["bad_unknown_arch.json"] = b'{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32}'
    out["bad_types.json"] = json.dumps(dict(qwen3, hidden_size="2048", num_experts=[128], norm_topk_prob="yes",
                                            model_type=3)).encode()
    out["bad_huge_numbers.json"] = json.dumps(dict(deepseek, hidden_size=1e300, n_routed_experts=-1e300,
                                                   num_experts_per_tok=9.5, routed_scaling_factor=1e39,
                                                   num_hidden_layers=9223372036854775808)).encode()
    out["bad_nan.json"] = json.dumps(dict(mixtral, hidden_size=float("nan"), num_local_experts=float("inf"))).encode()
    out["bad_negative.json"] = json.dumps(dict(qwen3, hidden_size=-2048, num_experts=-1, num_experts_per_tok=-8,
                                               moe_intermediate_size=0)).encode()
    out["bad_mlp_only_range.json"] = json.dumps(dict(qwen3, mlp_only_layers=[-1, 256, 1 << 40, 1e20, "3"])).encode()
    out["bad_block_size.json"] = json.dumps(dict(deepseek, quantization_config={
        "quant_method": "fp8", "weight_block_size": [0, -128, 1e30]})).encode()
    out["bad_quant_method.json"] = json.dumps(dict(qwen3, quantization_config={"quant_method": 4})).encode()
    out["bad_long_model_type.json"] = json.dumps(dict(qwen3, model_type="qwen3_moe" * 10)).encode()
    out["bad_topk_gt_experts.json"] = json.dumps(dict(mixtral, num_experts_per_tok=9, num_local_experts=8)).encode()
    out["bad_deep_nesting.json"] = b'{"model_type":"mixtral","x":' + b"[" * 2000 + b"]" * 2000 + b"}"
    out["bad_nul_inside.json"] = b'{"model_type":"mix\\u0000tral","hidden_size":4096}'
    out["bad_trailing_garbage.json"] = out["mixtral.json"] + b"\x00garbage}"
    return out


# ---------------------------------------------------------------------------------------------- index
def index_seeds():
    out = {}
    wm = {}
    for layer in range(2):
        shard = "model-%05d-of-00002.safetensors" % (layer + 1)
        wm["model.layers.%d.mlp.gate.weight" % layer] = shard
        for e in range(3):
            for proj in ("gate_proj", "up_proj", "down_proj"):
                wm["model.layers.%d.mlp.experts.%d.%s.weight" % (layer, e, proj)] = shard
    wm["model.embed_tokens.weight"] = "model-00001-of-00002.safetensors"
    wm["lm_head.weight"] = "model-00002-of-00002.safetensors"
    out["two_shards.json"] = json.dumps({"metadata": {"total_size": 123456}, "weight_map": wm}, indent=2).encode()
    out["one_shard_no_metadata.json"] = json.dumps({"weight_map": {"a": "model.safetensors"}}).encode()
    out["empty_weight_map.json"] = b'{"metadata": {}, "weight_map": {}}'
    out["unicode_names.json"] = json.dumps({"weight_map": {"t\u00e9nsor.\u4e2d": "sh\u00e4rd-1.safetensors",
                                                           "b": "sh\u00e4rd-1.safetensors"}}).encode()
    # ---- malformed ----
    out["bad_traversal.json"] = json.dumps({"weight_map": {"a": "../../etc/passwd", "b": "/abs/x.safetensors",
                                                           "c": "sub/dir.safetensors", "d": "..", "e": "."}}).encode()
    out["bad_value_types.json"] = b'{"weight_map": {"a": 1, "b": null, "c": ["x"], "d": {"e": "f"}}}'
    out["bad_empty_names.json"] = b'{"weight_map": {"": "", "a": ""}}'
    out["bad_missing_weight_map.json"] = b'{"metadata": {"total_size": 1}}'
    out["bad_weight_map_array.json"] = b'{"weight_map": ["a", "b"]}'
    out["bad_duplicate_keys.json"] = b'{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}'
    out["bad_truncated.json"] = out["two_shards.json"][:150]
    out["bad_not_object.json"] = b'"weight_map"'
    out["bad_nul_in_name.json"] = b'{"weight_map": {"a\\u0000b": "x\\u0000.safetensors"}}'
    many = {"t%d" % i: "s%d.st" % (i % 97) for i in range(150)}
    out["many_shards.json"] = json.dumps({"weight_map": many}, separators=(",", ":")).encode()
    return out


# ---------------------------------------------------------------------------------------------- moe_route
def route_seed(E, topk, kind, n_group, topk_group, flags, rsf, dtype, M, bias=None, logits=()):
    """fuzz_route.c's input: the 14-byte header, the bias if flags asks for it, the logits' raw bits."""
    b = struct.pack("<HBBBBBBfBB", E - 1, topk, kind, n_group, topk_group, 0, flags, rsf, dtype, M)
    if bias is not None:
        b += struct.pack("<%df" % E, *bias)
    return b + struct.pack("<%d%s" % (len(logits), "H" if dtype in (0, 1) else "f"), *logits)


def route_seeds():
    inf, nan = float("inf"), float("nan")
    return {
        "softmax_f32": route_seed(8, 2, 0, 0, 0, 1, 0.0, 2, 3, logits=[0.5, -1, 2, 2, 0, 1, 3, -3] * 3),
        "sigmoid_bf16_ties": route_seed(6, 3, 1, 0, 0, 0, 1.0, 0, 2, logits=[0x3F80] * 12),
        "grouped_f16": route_seed(16, 4, 2, 4, 2, 1, 2.5, 1, 4, logits=[0x3C00 + 17 * i for i in range(64)]),
        "biased_nan_inf": route_seed(8, 2, 3, 4, 2, 3, 1.0, 2, 2, bias=[0.1] * 8,
                                     logits=[nan, inf, -inf, 1e-40, 0.0, -0.0, 1.0, 2.0] * 2),
        "bad_kind": route_seed(4, 5, 5, 3, 9, 0, nan, 3, 1, logits=[1.0] * 4),
    }


# ---------------------------------------------------------------------------------------------- moe_pack
def pack_seed(prec, E, N, K, bn=0, bk=0, group=0, flags=0, buf=0, fill=64):
    """fuzz_pack.c's input: the 12-byte header (table indices for the blocks and the group), then
    `fill` bytes the arrays cycle over."""
    return bytes([prec, E - 1, N - 1 & 255, (N - 1) >> 8, (K - 1) & 255, (K - 1) >> 8, 0, bn, bk, group, flags, buf]) + \
        pattern(fill, prec)


def pack_seeds():
    return {
        "bf16_tails": pack_seed(0, 2, 45, 77, flags=3),
        "fp16": pack_seed(1, 1, 33, 64),
        "int8_sums": pack_seed(2, 1, 64, 130),
        "fp8_blocks": pack_seed(3, 2, 40, 200, bn=4, bk=3),
        "w4a8_group": pack_seed(4, 1, 33, 256, group=2),
        "w4a16_group": pack_seed(5, 1, 17, 130, group=1),
        "mxfp4": pack_seed(6, 1, 64, 96),
        "one_short": pack_seed(0, 1, 8, 8, buf=1),
        "null_scale": pack_seed(2, 1, 8, 8, flags=3 << 2),
    }


# ---------------------------------------------------------------------------------------------- the layer
def layer_seed(prec, E, N, K, M, topk, dtype=0, act=0, flags=0, strides=0, ctl=0, extra=0, fill=1024):
    """fuzz_layer.c's input: the 12-byte header (E, N, K stored so that the target's 1 + b % range
    gives them), then `fill` bytes for ids, weights, the map, x and the logits."""
    return bytes([prec, E - 1, N - 1, K - 1, M, topk, dtype, act, flags, strides, ctl, extra]) + pattern(fill, prec + 7 * M)


def layer_seeds():
    return {
        "bf16_fused": layer_seed(0, 4, 20, 33, 5, 2),
        "fp16_in_place_map": layer_seed(1, 3, 16, 40, 3, 2, dtype=1, flags=1 | 2, strides=2 | 2 << 2),
        "int8_shared_gate": layer_seed(2, 5, 31, 64, 7, 3, dtype=2, flags=4 | 8 | 32, ctl=1),
        "fp8_forward": layer_seed(3, 4, 12, 70, 6, 2, act=1, ctl=2 << 2 | 1 << 4, extra=7),
        "w4a8_chunks": layer_seed(4, 6, 40, 64, 9, 3, flags=32 | 64, ctl=2, strides=1 | 1 << 2),
        "w4a16_shared": layer_seed(5, 2, 8, 48, 4, 1, act=2, flags=4 | 128, ctl=1 << 2, extra=8 | 2),
        "mxfp4_oai": layer_seed(6, 3, 24, 64, 8, 2, act=2, extra=2 | 1),
        "bad_ws_short": layer_seed(0, 2, 8, 16, 2, 1, flags=16),
        "bad_ids": layer_seed(2, 3, 8, 16, 4, 4, dtype=3, act=3, strides=3),
        # many tokens (ctl bit 7 and extra bit 4) routed by moe_forward: two row blocks on one expert
        "fp8_forward_two_blocks": layer_seed(3, 1, 16, 24, 40, 1, ctl=128 | 2 << 2, extra=16, fill=1024),
    }


# ---------------------------------------------------------------------------------------------- main
def build():
    corpora = {"fuzz_safetensors": safetensors_seeds(), "fuzz_gguf": gguf_seeds(),
               "fuzz_config": config_seeds(), "fuzz_index": index_seeds(), "fuzz_route": route_seeds(),
               "fuzz_pack": pack_seeds(), "fuzz_layer": layer_seeds()}
    for target, seeds in corpora.items():
        for name, data in seeds.items():
            assert len(data) < MAX_SEED, "%s/%s is %d bytes" % (target, name, len(data))
    return corpora


def write(corpora, root):
    for target, seeds in corpora.items():
        d = os.path.join(root, target)
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        for name, data in sorted(seeds.items()):
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


def main():
    corpora = build()
    root = os.path.join(HERE, "corpus")
    if "--check" in sys.argv[1:]:
        with tempfile.TemporaryDirectory() as tmp:
            write(corpora, tmp)
            bad = []
            for target, seeds in corpora.items():
                have = set(os.listdir(os.path.join(root, target))) if os.path.isdir(os.path.join(root, target)) else set()
                if have != set(seeds):
                    bad.append("%s: files differ: %s" % (target, sorted(have ^ set(seeds))))
                for name, data in seeds.items():
                    p = os.path.join(root, target, name)
                    if os.path.exists(p) and open(p, "rb").read() != data:
                        bad.append("%s/%s differs" % (target, name))
            if bad:
                print("\n".join(bad))
                return 1
            print("corpus up to date")
            return 0
    write(corpora, root)
    n = sum(len(s) for s in corpora.values())
    print("wrote %d seeds under %s" % (n, os.path.relpath(root)))
    for target, seeds in corpora.items():
        print("  %-16s %3d seeds, largest %d bytes" % (target, len(seeds), max(len(v) for v in seeds.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
