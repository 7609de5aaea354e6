/* moe_checkpoint.h — one MoE layer of a checkpoint file, memory-mapped: Hugging Face safetensors
 * (a file, or a directory with config.json and shards) and llama.cpp's GGUF (v2, v3).
 *
 * Not part of moe.h: this header does file I/O (POSIX open/mmap) and parses JSON with cJSON
 * (Debian libcjson-dev; link -lcjson). In exactly one file:
 *     #define MOE_CHECKPOINT_IMPLEMENTATION
 *     #include "moe_checkpoint.h"      (includes moe.h; define MOE_IMPLEMENTATION there too, or link libmoe)
 *
 *   moe_ckpt *ck; moe_ckpt_error err; moe_ckpt_layer L;
 *   moe_ckpt_open("Qwen3-30B-A3B/", &ck, &err);           // config.json + index + shards, mapped
 *   moe_ckpt_load_layer(ck, 12, MOE_CKPT_AUTO, &L, &err);   // moe_weights + moe_router of layer 12
 *   moe_pack(&L.experts, ...); ... moe_ckpt_router_logits(&L, x, M, logits); moe_forward(...);
 *   moe_ckpt_layer_free(&L); moe_ckpt_close(ck);
 *
 * Hostile files. Every length, offset, shape, dtype, count and alignment read from a file is checked
 * before it is used: a file that is truncated, overlapping, oversized or malformed gets a status
 * and a message naming what is wrong (err.msg), never an out-of-bounds read. Allocations are bounded
 * by what the file holds: a count read from a file is checked against the bytes left before
 * anything is allocated for it. The parsers work on bytes in memory (no I/O), so they can be fuzzed
 * (tests/fuzz). Statuses: MOE_ERR_NULL (a NULL argument), MOE_ERR_ARG (a malformed file or value,
 * or a path that cannot be read), MOE_ERR_SHAPE (a tensor whose shape does not fit the layer),
 * MOE_ERR_UNSUPPORTED (a valid file this reader cannot run: an unknown architecture, a dtype or
 * quantization it does not convert, GPTQ act-order), MOE_ERR_OVERFLOW (a size past size_t),
 * MOE_ERR_EXPERT_ID (a layer that is not an MoE layer, or past the last layer).
 */
#ifndef MOE_CHECKPOINT_H
#define MOE_CHECKPOINT_H

#include "moe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What went wrong, in words: "model.layers.3.mlp.gate.weight: shape [64, 100], expected [64, 128]". */
typedef struct moe_ckpt_error {
  char msg[512];
} moe_ckpt_error;

/* Element types of tensors in either format. The GGUF block types hold blocks of 32 elements along
 * the last (contiguous) dimension: Q4_0 = f16 d + 16 bytes (element j low nibble of byte j,
 * element j + 16 its high nibble; value (q - 8) * d), Q8_0 = f16 d + 32 int8, MXFP4 = e8m0 + 16
 * bytes (nibbles as Q4_0; value e2m1(q) * 2^(e - 127)). */
typedef enum moe_ckpt_dtype {
  MOE_CKPT_F32, MOE_CKPT_F16, MOE_CKPT_BF16, MOE_CKPT_F64,
  MOE_CKPT_F8_E4M3, MOE_CKPT_F8_E5M2,
  MOE_CKPT_I8, MOE_CKPT_U8, MOE_CKPT_I16, MOE_CKPT_U16, MOE_CKPT_I32, MOE_CKPT_U32, MOE_CKPT_I64, MOE_CKPT_U64,
  MOE_CKPT_BOOL,
  MOE_CKPT_Q4_0, MOE_CKPT_Q8_0, MOE_CKPT_MXFP4,
  MOE_CKPT_OTHER /* a GGUF type this reader does not convert (K-quants, ...): listed, never read */
} moe_ckpt_dtype;

#define MOE_CKPT_MAX_DIMS 8

/* One tensor: shape in row-major order, the last dimension contiguous (GGUF's ne[] reversed). */
typedef struct moe_ckpt_tensor {
  const char *name;
  moe_ckpt_dtype dtype;
  int32_t n_dims;
  int64_t shape[MOE_CKPT_MAX_DIMS];
  const uint8_t *data; /* inside the mapped file; bytes checked against the file */
  size_t bytes;
} moe_ckpt_tensor;

/* A parsed tensor directory (one file). Owns names and the array; data points into the caller's bytes. */
typedef struct moe_ckpt_tensors {
  moe_ckpt_tensor *t;
  int64_t n;
  char *names;
} moe_ckpt_tensors;

/* Architectures the layer loader knows. */
typedef enum moe_ckpt_arch {
  MOE_CKPT_ARCH_UNKNOWN = 0,
  MOE_CKPT_MIXTRAL,   /* HF "mixtral"; GGUF "llama" with experts                               */
  MOE_CKPT_QWEN2_MOE, /* HF "qwen2_moe"; GGUF "qwen2moe": shared expert with a sigmoid gate       */
  MOE_CKPT_QWEN3_MOE, /* HF "qwen3_moe"; GGUF "qwen3moe"                                         */
  MOE_CKPT_DEEPSEEK_V3, /* HF "deepseek_v3"; GGUF "deepseek2" with sigmoid gating               */
  MOE_CKPT_GPT_OSS    /* HF "gpt_oss"; GGUF "gpt-oss": router bias, expert biases, SwiGLU-OAI    */
} moe_ckpt_arch;

/* Quantization a safetensors checkpoint declares in config.json's quantization_config. */
typedef enum moe_ckpt_quant {
  MOE_CKPT_QUANT_NONE = 0,
  MOE_CKPT_QUANT_FP8,   /* quant_method "fp8", weight_block_size [bn, bk]                         */
  MOE_CKPT_QUANT_AWQ,   /* quant_method "awq", version "gemm", bits 4                              */
  MOE_CKPT_QUANT_GPTQ,  /* quant_method "gptq", bits 4 (checkpoint_format "gptq" or "gptq_v2")     */
  MOE_CKPT_QUANT_MXFP4  /* quant_method "mxfp4" (gpt-oss)                                          */
} moe_ckpt_quant;

/* The architecture of the whole model: from config.json, or from GGUF metadata. */
typedef struct moe_ckpt_config {
  moe_ckpt_arch arch;
  char model_type[32];         /* as the file names it: "qwen3_moe", "qwen3moe", ...              */
  int64_t hidden;              /* hidden_size / embedding_length (K)                               */
  int64_t n_layers;            /* num_hidden_layers / block_count                                  */
  int64_t n_experts;           /* routed experts (E)                                               */
  int64_t topk;                /* experts per token                                                */
  int64_t moe_inter;           /* moe_intermediate_size / expert_feed_forward_length (N)          */
  int64_t shared_inter;        /* the shared expert's intermediate size; 0: none                   */
  int32_t shared_gated;        /* qwen2_moe: the shared expert's output times sigmoid(x . gate)    */
  int32_t norm_topk_prob;      /* renormalize the chosen weights                                   */
  int32_t sigmoid;             /* scoring_func sigmoid (DeepSeek-V3) instead of softmax            */
  int32_t n_group, topk_group; /* grouped routing; 1, 1 when none                                  */
  float routed_scaling_factor; /* 1 when the model has none                                        */
  float swiglu_alpha, swiglu_limit; /* gpt-oss: 1.702 and swiglu_limit (7.0)                       */
  int64_t first_dense;         /* leading dense layers: first_k_dense_replace, leading_dense_block_count */
  int64_t moe_every;           /* decoder_sparse_step / moe_layer_freq (1: every layer past first_dense) */
  uint64_t mlp_only[4];        /* qwen2/3_moe mlp_only_layers, as a bit set of layers 0..255        */
  moe_ckpt_quant quant;
  int32_t bits, group, block_n, block_k; /* AWQ/GPTQ bits and group_size; FP8 weight_block_size    */
  int32_t desc_act, gptq_v2;   /* GPTQ act-order flag; checkpoint_format gptq_v2                    */
} moe_ckpt_config;

/* The tensors of a sharded safetensors checkpoint: model.safetensors.index.json. */
typedef struct moe_ckpt_index {
  char **files;         /* distinct shard file names, each a plain name inside the directory */
  int64_t n_files;
  char **tensors;       /* tensor names ... */
  int32_t *file_of;     /* ... and the index into files of each */
  int64_t n_tensors;
} moe_ckpt_index;

/* ---- parsers: bytes in memory -> descriptions (what the fuzz targets call) -------------------- */
MOE_API moe_status moe_ckpt_parse_safetensors(const uint8_t *file, size_t size, moe_ckpt_tensors *out,
                                              moe_ckpt_error *err);
/* GGUF v2/v3: tensors and, when cfg is not NULL, the architecture from the metadata. */
MOE_API moe_status moe_ckpt_parse_gguf(const uint8_t *file, size_t size, moe_ckpt_tensors *out,
                                       moe_ckpt_config *cfg, moe_ckpt_error *err);
MOE_API moe_status moe_ckpt_parse_config(const char *json, size_t size, moe_ckpt_config *cfg, moe_ckpt_error *err);
MOE_API moe_status moe_ckpt_parse_index(const char *json, size_t size, moe_ckpt_index *idx, moe_ckpt_error *err);
MOE_API void moe_ckpt_tensors_free(moe_ckpt_tensors *t);
MOE_API void moe_ckpt_index_free(moe_ckpt_index *idx);
MOE_API const char *moe_ckpt_dtype_name(moe_ckpt_dtype t);
MOE_API const char *moe_ckpt_arch_name(moe_ckpt_arch a);

/* ---- a checkpoint on disk ---------------------------------------------------------------------- */
typedef struct moe_ckpt moe_ckpt;

/* path: a .safetensors file (config.json beside it), a directory with config.json and either
 * model.safetensors or model.safetensors.index.json and its shards, or a .gguf file. */
MOE_API moe_status moe_ckpt_open(const char *path, moe_ckpt **out, moe_ckpt_error *err);
MOE_API const moe_ckpt_config *moe_ckpt_config_of(const moe_ckpt *c);
/* A tensor by name, or NULL. */
MOE_API const moe_ckpt_tensor *moe_ckpt_find(const moe_ckpt *c, const char *name);
MOE_API void moe_ckpt_close(moe_ckpt *c);

/* One MoE layer, in the plain layouts of moe_weights (owned by the layer; pack them with moe_pack). */
typedef struct moe_ckpt_layer {
  moe_weights experts;         /* E routed experts                                                   */
  moe_weights shared;          /* the shared expert (E = 1, same precision), or E = 0 when none     */
  moe_router router;           /* kind, topk, groups, renormalize, routed scaling factor, bias       */
  float *router_w;             /* [E, K] f32 router weight                                           */
  float *router_b;             /* [E] router bias (gpt-oss) or NULL                                  */
  float *correction_bias;      /* [E] DeepSeek-V3 e_score_correction_bias or NULL (router points here) */
  float *shared_gate;          /* [K] qwen2_moe shared_expert_gate or NULL                           */
  moe_activation act;
  float alpha, limit;          /* SwiGLU-OAI parameters (gpt-oss), else 0                            */
  char how[160];               /* what was converted: "fp8 e4m3 128x128 blocks (exact)", ...         */
  double requant_rel_err;      /* GGUF Q8_0 -> int8 per channel: max relative error added (else 0)   */
  void *owned_[16];            /* buffers the layer owns (freed by moe_ckpt_layer_free)              */
} moe_ckpt_layer;

/* Which precision to run: MOE_CKPT_AUTO picks the one that holds the file's weights exactly
 * (bf16 -> bf16, f16 -> fp16, f32 -> bf16 rounded, fp8 -> fp8, AWQ/GPTQ/Q4_0 -> int4-w4a16,
 * mxfp4 -> mxfp4, Q8_0 -> int8 requantized per channel); int4 files may ask for int4-w4a8. */
#define MOE_CKPT_AUTO (-1)
MOE_API moe_status moe_ckpt_load_layer(const moe_ckpt *c, int64_t layer, int precision, moe_ckpt_layer *out,
                                       moe_ckpt_error *err);
MOE_API void moe_ckpt_layer_free(moe_ckpt_layer *l);
/* logits [M, E] = x [M, K] (f32) . router_w^T + router_b, in f32 (double sums). */
MOE_API void moe_ckpt_router_logits(const moe_ckpt_layer *l, const float *x, int64_t M, float *logits);

#ifdef __cplusplus
}
#endif
#endif /* MOE_CHECKPOINT_H */
