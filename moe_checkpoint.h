/* moe_checkpoint.h — one MoE layer of a checkpoint file, memory-mapped: Hugging Face safetensors
 * (a file, or a directory with config.json and shards) and llama.cpp's GGUF (v2, v3).
 *
 * Not part of moe.h: this header does file I/O (POSIX open/mmap) and parses JSON with cJSON
 * (Debian libcjson-dev; link -lcjson). In exactly one file (POSIX: _POSIX_C_SOURCE 200809L or gnu modes):
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
 * or a path that cannot be read), MOE_ERR_SHAPE (a tensor of the layer missing, or of a shape that
 * does not fit it),
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
  void *owned_[32];            /* buffers the layer owns (freed by moe_ckpt_layer_free)              */
} moe_ckpt_layer;

/* Which precision to run: MOE_CKPT_AUTO picks the one that holds the file's weights exactly
 * (bf16 -> bf16, f16 -> fp16, f32 -> bf16 rounded, fp8 -> fp8, AWQ/GPTQ/Q4_0 -> int4-w4a16,
 * mxfp4 -> mxfp4, Q8_0 -> int8 requantized per channel); int4 files may ask for int4-w4a8. */
#define MOE_CKPT_AUTO (-1)
MOE_API moe_status moe_ckpt_load_layer(const moe_ckpt *c, int64_t layer, int precision, moe_ckpt_layer *out,
                                       moe_ckpt_error *err);
/* The same with the experts imported on the caller's threads (par as the compute calls take it;
 * NULL: one thread): one expert per item, the same bytes for any thread count and order; on a
 * failure the status and message of the lowest failing expert. (GGUF files import on one thread.) */
MOE_API moe_status moe_ckpt_load_layer_parallel(const moe_ckpt *c, int64_t layer, int precision, moe_ckpt_layer *out,
                                                moe_ckpt_error *err, const moe_parallel *par);
/* The same without importing the experts: the router, its biases, the shared expert's gate and the
 * activation as moe_ckpt_load_layer gives them, and experts / shared described (E, N, K, precision,
 * blocks; every tensor checked) with no weights (w13, w2 and biases NULL): for experts that come
 * packed from a moe_packfile.h file. Reads the router's bytes only. */
MOE_API moe_status moe_ckpt_load_router(const moe_ckpt *c, int64_t layer, int precision, moe_ckpt_layer *out,
                                        moe_ckpt_error *err);
/* moe_ckpt_load_layer and moe_pack in one pass, for a first load that reads and writes each byte
 * once: the routed experts (and the shared expert; shared->E = 0 when none) are packed into buffers
 * the layer owns (freed by moe_ckpt_layer_free), and out describes them as moe_ckpt_load_router
 * does (no plain weights). Hugging Face checkpoints other than gpt-oss stream: each of par's threads
 * imports one expert at a time into its own scratch and packs it into place (moe_pack_part), so the
 * plain weights of the whole layer are never held; gpt-oss and GGUF files load the layer's plain
 * weights on par's threads first, then pack them and free them. The bytes equal moe_pack's of
 * moe_ckpt_load_layer's weights for any thread count; failures as moe_ckpt_load_layer_parallel's. */
MOE_API moe_status moe_ckpt_load_layer_packed(const moe_ckpt *c, int64_t layer, int precision, moe_ckpt_layer *out,
                                              moe_experts *experts, moe_experts *shared, moe_ckpt_error *err,
                                              const moe_parallel *par);
MOE_API void moe_ckpt_layer_free(moe_ckpt_layer *l);
/* logits [M, E] = x [M, K] (f32) . router_w^T + router_b, in f32 (double sums). */
MOE_API void moe_ckpt_router_logits(const moe_ckpt_layer *l, const float *x, int64_t M, float *logits);

#ifdef __cplusplus
}
#endif
#endif /* MOE_CHECKPOINT_H */

#ifdef MOE_CHECKPOINT_IMPLEMENTATION
#ifndef MOE_CHECKPOINT_IMPLEMENTATION_DONE
#define MOE_CHECKPOINT_IMPLEMENTATION_DONE

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ==== errors ===================================================================================== */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static moe_status moe__ck_fail(moe_ckpt_error *err, moe_status s, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return s;
}

/* ==== bounded reads =============================================================================== */
typedef struct moe__ck_reader {
  const uint8_t *p;
  size_t size, off;
} moe__ck_reader;

static uint64_t moe__ck_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static int moe__ck_take(moe__ck_reader *r, size_t n, const uint8_t **out) {
  if (n > r->size - r->off) return 0;
  *out = r->p + r->off;
  r->off += n;
  return 1;
}
static int moe__ck_u32(moe__ck_reader *r, uint32_t *v) {
  const uint8_t *b;
  if (!moe__ck_take(r, 4, &b)) return 0;
  *v = (uint32_t)moe__ck_le(b, 4);
  return 1;
}
static int moe__ck_u64(moe__ck_reader *r, uint64_t *v) {
  const uint8_t *b;
  if (!moe__ck_take(r, 8, &b)) return 0;
  *v = moe__ck_le(b, 8);
  return 1;
}

static int moe__ck_mul(size_t a, size_t b, size_t *out) {
  if (a && b > SIZE_MAX / a) return 0;
  *out = a * b;
  return 1;
}

/* JSON text of `size` bytes (no NUL needed) that holds one value and nothing but whitespace after it. */
static cJSON *moe__ck_json_parse(const char *text, size_t size) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, size, &end, 0);
  if (root && end)
    for (; end < text + size; end++)
      if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
        cJSON_Delete(root);
        return NULL;
      }
  return root;
}

/* ==== dtypes ====================================================================================== */
static const struct {
  const char *st;     /* safetensors name                         */
  int gguf;           /* ggml_type id, or -1                       */
  size_t block, size; /* elements per block and bytes per block   */
} moe__ck_types[] = { /* in the order of moe_ckpt_dtype */
    {"F32", 0, 1, 4},         {"F16", 1, 1, 2},
    {"BF16", 30, 1, 2},      {"F64", 28, 1, 8},
    {"F8_E4M3", -1, 1, 1}, {"F8_E5M2", -1, 1, 1},
    {"I8", 24, 1, 1},          {"U8", -1, 1, 1},
    {"I16", 25, 1, 2},        {"U16", -1, 1, 2},
    {"I32", 26, 1, 4},        {"U32", -1, 1, 4},
    {"I64", 27, 1, 8},        {"U64", -1, 1, 8},
    {"BOOL", -1, 1, 1},      {"Q4_0", 2, 32, 18},
    {"Q8_0", 8, 32, 34},     {"MXFP4", 39, 32, 17},
    {"other", -1, 0, 0},
};

MOE_API const char *moe_ckpt_dtype_name(moe_ckpt_dtype t) {
  return (int)t >= 0 && t <= MOE_CKPT_OTHER ? moe__ck_types[t].st : "invalid";
}

MOE_API const char *moe_ckpt_arch_name(moe_ckpt_arch a) {
  static const char *names[] = {"unknown", "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "gpt_oss"};
  return (int)a >= 0 && a <= MOE_CKPT_GPT_OSS ? names[a] : "invalid";
}

/* Bytes of a tensor; 0 with *ok = 0 when the shape does not fit the type or size_t. */
static size_t moe__ck_tensor_bytes(const moe_ckpt_tensor *t, int *ok) {
  size_t n = 1, last = t->n_dims ? (size_t)t->shape[t->n_dims - 1] : 1, bytes;
  const size_t block = moe__ck_types[t->dtype].block;
  *ok = 0;
  if (!block) return 0;
  for (int d = 0; d < t->n_dims; d++)
    if (t->shape[d] < 0 || !moe__ck_mul(n, (size_t)t->shape[d], &n)) return 0;
  if (last % block) return 0;
  if (!moe__ck_mul(n / block, moe__ck_types[t->dtype].size, &bytes)) return 0;
  *ok = 1;
  return bytes;
}

MOE_API void moe_ckpt_tensors_free(moe_ckpt_tensors *t) {
  if (!t) return;
  free(t->t);
  free(t->names);
  memset(t, 0, sizeof *t);
}

/* Shared checks of a parsed directory: data ranges inside [data, data + size), no two tensors
 * overlapping, no name twice. */
static int moe__ck_cmp_data(const void *a, const void *b) {
  const moe_ckpt_tensor *x = *(const moe_ckpt_tensor *const *)a, *y = *(const moe_ckpt_tensor *const *)b;
  return x->data < y->data ? -1 : x->data > y->data;
}
static int moe__ck_cmp_name(const void *a, const void *b) {
  return strcmp((*(const moe_ckpt_tensor *const *)a)->name, (*(const moe_ckpt_tensor *const *)b)->name);
}
static moe_status moe__ck_check_directory(const moe_ckpt_tensors *T, moe_ckpt_error *err) {
  moe_ckpt_tensor **order;
  moe_status st = MOE_OK;
  if (T->n == 0) return MOE_OK;
  order = (moe_ckpt_tensor **)malloc((size_t)T->n * sizeof *order);
  if (!order) return moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory for %lld tensors", (long long)T->n);
  for (int64_t i = 0; i < T->n; i++) order[i] = &T->t[i];
  qsort(order, (size_t)T->n, sizeof *order, moe__ck_cmp_name);
  for (int64_t i = 1; i < T->n && st == MOE_OK; i++)
    if (!strcmp(order[i - 1]->name, order[i]->name))
      st = moe__ck_fail(err, MOE_ERR_ARG, "tensor %s: listed twice", order[i]->name);
  qsort(order, (size_t)T->n, sizeof *order, moe__ck_cmp_data);
  { /* by start: each must begin at or after the furthest end so far */
    const moe_ckpt_tensor *far = NULL;
    for (int64_t i = 0; i < T->n && st == MOE_OK; i++) {
      const moe_ckpt_tensor *b = order[i];
      if (!b->data || !b->bytes) continue;
      if (far && far->data + far->bytes > b->data)
        st = moe__ck_fail(err, MOE_ERR_ARG, "tensors %s and %s overlap", far->name, b->name);
      if (!far || b->data + b->bytes > far->data + far->bytes) far = b;
    }
  }
  free(order);
  return st;
}

/* ==== safetensors ==================================================================================
 * [u64 LE n][n bytes of JSON: {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]},
 * ..., "__metadata__": {str: str}}][data]; offsets relative to the data section.
 * Source: huggingface/safetensors, docs/source/index.mdx ("Format") and safetensors/src/tensor.rs
 * (MAX_HEADER_SIZE 100'000'000, the offset and size checks). */
#define MOE__CK_MAX_HEADER 100000000u

/* A JSON number that is a non-negative integer below 2^53. */
static int moe__ck_json_u53(const cJSON *v, int64_t *out) {
  double d;
  if (!cJSON_IsNumber(v)) return 0;
  d = v->valuedouble;
  if (!(d >= 0.0 && d <= 9007199254740992.0) || d != (double)(int64_t)d) return 0;
  *out = (int64_t)d;
  return 1;
}

static int moe__ck_st_dtype(const char *s, moe_ckpt_dtype *t) {
  for (int i = 0; i <= MOE_CKPT_BOOL; i++)
    if (!strcmp(s, moe__ck_types[i].st)) return *t = (moe_ckpt_dtype)i, 1;
  return 0;
}

static moe_status moe__ck_st_entry(const cJSON *e, const uint8_t *data, size_t data_size, moe_ckpt_tensor *t,
                                   moe_ckpt_error *err) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype"), *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets"), *v;
  int64_t b, en, n = 0;
  int ok;
  size_t bytes;
  if (!cJSON_IsObject(e) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off))
    return moe__ck_fail(err, MOE_ERR_ARG, "tensor %s: needs dtype, shape and data_offsets", t->name);
  if (!moe__ck_st_dtype(dt->valuestring, &t->dtype)) t->dtype = MOE_CKPT_OTHER;
  cJSON_ArrayForEach(v, sh) {
    if (n == MOE_CKPT_MAX_DIMS) return moe__ck_fail(err, MOE_ERR_UNSUPPORTED, "tensor %s: more than %d dimensions", t->name, MOE_CKPT_MAX_DIMS);
    if (!moe__ck_json_u53(v, &t->shape[n])) return moe__ck_fail(err, MOE_ERR_ARG, "tensor %s: shape is not a list of sizes", t->name);
    n++;
  }
  t->n_dims = (int32_t)n;
  if (cJSON_GetArraySize(off) != 2 || !moe__ck_json_u53(cJSON_GetArrayItem(off, 0), &b) ||
      !moe__ck_json_u53(cJSON_GetArrayItem(off, 1), &en) || b > en)
    return moe__ck_fail(err, MOE_ERR_ARG, "tensor %s: data_offsets is not [begin, end]", t->name);
  if ((uint64_t)en > data_size)
    return moe__ck_fail(err, MOE_ERR_ARG, "tensor %s: data_offsets end %lld past the data (%zu bytes)", t->name, (long long)en, data_size);
  t->data = data + b;
  t->bytes = (size_t)(en - b);
  if (t->dtype == MOE_CKPT_OTHER) return MOE_OK; /* listed, never read */
  bytes = moe__ck_tensor_bytes(t, &ok);
  if (!ok || bytes != t->bytes)
    return moe__ck_fail(err, MOE_ERR_ARG, "tensor %s: %zu bytes for its shape and dtype %s, data_offsets hold %zu", t->name,
                        ok ? bytes : (size_t)0, dt->valuestring, t->bytes);
  return MOE_OK;
}

MOE_API moe_status moe_ckpt_parse_safetensors(const uint8_t *file, size_t size, moe_ckpt_tensors *out, moe_ckpt_error *err) {
  uint64_t n;
  cJSON *root, *e;
  size_t names = 0;
  int64_t count = 0;
  moe_status st = MOE_OK;
  if (!file || !out) return moe__ck_fail(err, MOE_ERR_NULL, "NULL argument");
  memset(out, 0, sizeof *out);
  if (size < 8) return moe__ck_fail(err, MOE_ERR_ARG, "safetensors: %zu bytes, shorter than the header length", size);
  n = moe__ck_le(file, 8);
  if (n > MOE__CK_MAX_HEADER) return moe__ck_fail(err, MOE_ERR_ARG, "safetensors: header of %llu bytes (limit 100000000)", (unsigned long long)n);
  if (n > size - 8) return moe__ck_fail(err, MOE_ERR_ARG, "safetensors: header of %llu bytes past the end of the file (%zu bytes)", (unsigned long long)n, size);
  root = moe__ck_json_parse((const char *)file + 8, (size_t)n);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return moe__ck_fail(err, MOE_ERR_ARG, "safetensors: the header is not a JSON object");
  }
  cJSON_ArrayForEach(e, root) {
    if (!e->string) continue;
    if (!strcmp(e->string, "__metadata__")) continue;
    count++;
    names += strlen(e->string) + 1; /* bounded by n */
  }
  out->t = (moe_ckpt_tensor *)calloc(count ? (size_t)count : 1, sizeof *out->t);
  out->names = (char *)malloc(names ? names : 1);
  if (!out->t || !out->names) st = moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory for %lld tensors", (long long)count);
  names = 0;
  cJSON_ArrayForEach(e, root) {
    moe_ckpt_tensor *t;
    if (st != MOE_OK) break;
    if (!e->string) continue;
    if (!strcmp(e->string, "__metadata__")) {
      if (!cJSON_IsObject(e)) st = moe__ck_fail(err, MOE_ERR_ARG, "safetensors: __metadata__ is not an object");
      continue;
    }
    t = &out->t[out->n++];
    t->name = strcpy(out->names + names, e->string);
    names += strlen(e->string) + 1;
    st = moe__ck_st_entry(e, file + 8 + n, size - 8 - (size_t)n, t, err);
  }
  cJSON_Delete(root);
  if (st == MOE_OK) st = moe__ck_check_directory(out, err);
  if (st != MOE_OK) moe_ckpt_tensors_free(out);
  return st;
}

/* ==== GGUF ==========================================================================================
 * "GGUF" u32 version u64 n_tensors u64 n_kv, n_kv x (string key, u32 type, value), n_tensors x
 * (string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset), padding to
 * general.alignment (default 32), data; strings are u64 length + bytes; offsets relative to the
 * data section, each a multiple of the alignment; ne[0] is the contiguous dimension.
 * Source: ggml-org/ggml docs/gguf.md; ggml/include/ggml.h (enum ggml_type) and ggml/src/ggml.c
 * (type_traits: block sizes); ggml/src/ggml-common.h (block_q4_0, block_q8_0, block_mxfp4). */
enum { MOE__GGUF_U8, MOE__GGUF_I8, MOE__GGUF_U16, MOE__GGUF_I16, MOE__GGUF_U32, MOE__GGUF_I32, MOE__GGUF_F32,
       MOE__GGUF_BOOL, MOE__GGUF_STRING, MOE__GGUF_ARRAY, MOE__GGUF_U64, MOE__GGUF_I64, MOE__GGUF_F64, MOE__GGUF_TYPES };
static const uint8_t moe__gguf_size[MOE__GGUF_TYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
#define MOE__GGUF_MAX_DEPTH 4
#define MOE__GGUF_MAX_NAME 65535

static int moe__gguf_string(moe__ck_reader *r, const uint8_t **s, uint64_t *len) {
  return moe__ck_u64(r, len) && *len <= r->size - r->off && moe__ck_take(r, (size_t)*len, s);
}

/* Skips one value of type `type`; 0 when it runs past the end or is malformed. */
static int moe__gguf_skip(moe__ck_reader *r, uint32_t type, int depth) {
  const uint8_t *b;
  uint64_t n;
  uint32_t et;
  if (type >= MOE__GGUF_TYPES) return 0;
  if (type == MOE__GGUF_STRING) return moe__gguf_string(r, &b, &n);
  if (type != MOE__GGUF_ARRAY) return moe__ck_take(r, moe__gguf_size[type], &b);
  if (depth >= MOE__GGUF_MAX_DEPTH || !moe__ck_u32(r, &et) || !moe__ck_u64(r, &n) || et >= MOE__GGUF_TYPES) return 0;
  if (et != MOE__GGUF_STRING && et != MOE__GGUF_ARRAY) {
    size_t bytes;
    return moe__ck_mul((size_t)n, moe__gguf_size[et], &bytes) && n <= SIZE_MAX && moe__ck_take(r, bytes, &b);
  }
  if (n > (r->size - r->off) / 8) return 0; /* every element takes at least 8 bytes */
  for (uint64_t i = 0; i < n; i++)
    if (!moe__gguf_skip(r, et, depth + 1)) return 0;
  return 1;
}

/* A scalar value as a double (integers, floats, bool); 0 for strings and arrays. */
static int moe__gguf_number(uint32_t type, const uint8_t *v, double *d) {
  switch (type) {
  case MOE__GGUF_U8: case MOE__GGUF_BOOL: *d = v[0]; return 1;
  case MOE__GGUF_I8: *d = (int8_t)v[0]; return 1;
  case MOE__GGUF_U16: *d = (double)moe__ck_le(v, 2); return 1;
  case MOE__GGUF_I16: *d = (int16_t)moe__ck_le(v, 2); return 1;
  case MOE__GGUF_U32: *d = (double)moe__ck_le(v, 4); return 1;
  case MOE__GGUF_I32: *d = (int32_t)moe__ck_le(v, 4); return 1;
  case MOE__GGUF_U64: *d = (double)moe__ck_le(v, 8); return 1;
  case MOE__GGUF_I64: *d = (double)(int64_t)moe__ck_le(v, 8); return 1;
  case MOE__GGUF_F32: { uint32_t u = (uint32_t)moe__ck_le(v, 4); float f; memcpy(&f, &u, 4); *d = f; return 1; }
  case MOE__GGUF_F64: { uint64_t u = moe__ck_le(v, 8); memcpy(d, &u, 8); return 1; }
  default: return 0;
  }
}

/* ggml types: ours, or only their block size (to check the bytes they claim). */
static int moe__gguf_type(uint32_t id, moe_ckpt_dtype *t, size_t *block, size_t *size) {
  static const struct { uint32_t id; size_t block, size; } other[] = {
      {3, 32, 20}, {6, 32, 22}, {7, 32, 24}, {9, 32, 36}, {10, 256, 84}, {11, 256, 110},
      {12, 256, 144}, {13, 256, 176}, {14, 256, 210}, {15, 256, 292}};
  for (int i = 0; i < MOE_CKPT_OTHER; i++)
    if (moe__ck_types[i].gguf == (int)id) {
      *t = (moe_ckpt_dtype)i, *block = moe__ck_types[i].block, *size = moe__ck_types[i].size;
      return 1;
    }
  *t = MOE_CKPT_OTHER;
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
    if (other[i].id == id) return *block = other[i].block, *size = other[i].size, 1;
  return *block = 0, *size = 0, 1; /* unknown: listed without data */
}

/* One metadata pair seen by the config reader. */
typedef struct moe__gguf_kv {
  const uint8_t *key;
  uint64_t klen;
  uint32_t type;
  const uint8_t *val;
} moe__gguf_kv;

static int moe__gguf_key_is(const moe__gguf_kv *kv, const char *prefix, const char *name) {
  size_t p = prefix ? strlen(prefix) : 0, n = strlen(name);
  if (kv->klen != (prefix ? p + 1 : 0) + n) return 0;
  if (prefix && (memcmp(kv->key, prefix, p) || kv->key[p] != '.')) return 0;
  return !memcmp(kv->key + (prefix ? p + 1 : 0), name, n);
}

/* The architecture of a GGUF model, from its metadata. Keys: llama.cpp src/llama-arch.cpp
 * (LLM_KV_NAMES) and src/llama-model.cpp (what each architecture reads, and its defaults). */
static void moe__gguf_config_kv(moe_ckpt_config *c, const moe__gguf_kv *kv) {
  static const struct { const char *name; int field; } keys[] = {
      {"block_count", 0}, {"embedding_length", 1}, {"expert_count", 2}, {"expert_used_count", 3},
      {"expert_feed_forward_length", 4}, {"feed_forward_length", 5}, {"expert_shared_feed_forward_length", 6},
      {"expert_shared_count", 7}, {"expert_weights_norm", 8}, {"expert_weights_scale", 9},
      {"expert_gating_func", 10}, {"expert_group_count", 11}, {"expert_group_used_count", 12},
      {"leading_dense_block_count", 13}};
  double d;
  if (!moe__gguf_number(kv->type, kv->val, &d)) return;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    if (!moe__gguf_key_is(kv, c->model_type, keys[i].name)) continue;
    const int64_t v = d >= 0 && d <= 1099511627776.0 ? (int64_t)d : -1; /* up to 2^40, as config.json; else invalid */
    switch (keys[i].field) {
    case 0: c->n_layers = v; break;
    case 1: c->hidden = v; break;
    case 2: c->n_experts = v; break;
    case 3: c->topk = v; break;
    case 4: c->moe_inter = v; break;
    case 5: if (!c->moe_inter) c->moe_inter = v; break; /* llama (Mixtral): the experts' size */
    case 6: c->shared_inter = v; break;
    case 7: c->shared_inter = c->shared_inter ? c->shared_inter : -v; break; /* resolved below */
    case 8: c->norm_topk_prob = d != 0; break;
    case 9: c->routed_scaling_factor = (float)d; break;
    case 10: c->sigmoid = v == 2; break; /* LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID */
    case 11: c->n_group = (int32_t)(v > 0 && v < 1025 ? v : -1); break;
    case 12: c->topk_group = (int32_t)(v > 0 && v < 1025 ? v : -1); break;
    case 13: c->first_dense = v; break;
    }
  }
}

static moe_status moe__gguf_config(moe_ckpt_config *c, const char *arch, size_t alen, moe_ckpt_error *err) {
  static const struct { const char *gguf; moe_ckpt_arch arch; int norm; } archs[] = {
      {"llama", MOE_CKPT_MIXTRAL, 1}, {"qwen2moe", MOE_CKPT_QWEN2_MOE, 0}, {"qwen3moe", MOE_CKPT_QWEN3_MOE, 1},
      {"deepseek2", MOE_CKPT_DEEPSEEK_V3, 0}, {"gpt-oss", MOE_CKPT_GPT_OSS, 1}};
  memset(c, 0, sizeof *c);
  if (alen >= sizeof c->model_type) return moe__ck_fail(err, MOE_ERR_UNSUPPORTED, "gguf: architecture name of %zu bytes", alen);
  memcpy(c->model_type, arch, alen);
  c->model_type[alen] = 0;
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
    if (!strcmp(c->model_type, archs[i].gguf)) c->arch = archs[i].arch, c->norm_topk_prob = archs[i].norm;
  if (c->arch == MOE_CKPT_ARCH_UNKNOWN)
    return moe__ck_fail(err, MOE_ERR_UNSUPPORTED, "gguf: architecture \"%s\" is not one this reader knows", c->model_type);
  c->routed_scaling_factor = 1.0f, c->n_group = 1, c->topk_group = 1, c->moe_every = 1;
  if (c->arch == MOE_CKPT_GPT_OSS) c->swiglu_alpha = 1.702f, c->swiglu_limit = 7.0f;
  return MOE_OK;
}

static moe_status moe__gguf_config_done(moe_ckpt_config *c, moe_ckpt_error *err) {
  if (c->shared_inter < 0) { /* DeepSeek: count x expert size (each at most 2^40: no overflow) */
    if (c->shared_inter < -1024 || c->moe_inter < 1)
      return moe__ck_fail(err, MOE_ERR_ARG, "gguf: expert_shared_count %lld", (long long)-c->shared_inter);
    c->shared_inter = -c->shared_inter * c->moe_inter;
  }
  if (!(c->routed_scaling_factor >= 0.0f && c->routed_scaling_factor < 1e30f))
    return moe__ck_fail(err, MOE_ERR_ARG, "gguf: expert_weights_scale %g", (double)c->routed_scaling_factor);
  if (c->routed_scaling_factor == 0.0f) c->routed_scaling_factor = 1.0f; /* llama.cpp: 0 means none */
  if (c->arch == MOE_CKPT_QWEN2_MOE && c->shared_inter) c->shared_gated = 1;
  if (c->n_group < 1 || c->topk_group < 1 || c->topk_group > c->n_group)
    return moe__ck_fail(err, MOE_ERR_ARG, "gguf: expert groups %d, used %d", c->n_group, c->topk_group);
  if (c->hidden < 1 || c->n_layers < 1 || c->n_experts < 1 || c->topk < 1 || c->topk > c->n_experts || c->moe_inter < 1)
    return moe__ck_fail(err, MOE_ERR_ARG,
                        "gguf: %s needs embedding_length, block_count, expert_count, expert_used_count (<= experts) "
                        "and the experts' feed_forward_length (got %lld, %lld, %lld, %lld, %lld)",
                        c->model_type, (long long)c->hidden, (long long)c->n_layers, (long long)c->n_experts,
                        (long long)c->topk, (long long)c->moe_inter);
  return MOE_OK;
}

MOE_API moe_status moe_ckpt_parse_gguf(const uint8_t *file, size_t size, moe_ckpt_tensors *out, moe_ckpt_config *cfg,
                                       moe_ckpt_error *err) {
  moe__ck_reader r = {file, size, 0};
  const uint8_t *b, *arch = NULL;
  uint32_t version, alignment = 32;
  uint64_t n_tensors, n_kv, alen = 0, names = 0;
  size_t kv_start, info_start, data_start;
  moe_status st;
  if (!file || !out) return moe__ck_fail(err, MOE_ERR_NULL, "NULL argument");
  memset(out, 0, sizeof *out);
  if (!moe__ck_take(&r, 4, &b) || memcmp(b, "GGUF", 4)) return moe__ck_fail(err, MOE_ERR_ARG, "gguf: no GGUF magic");
  if (!moe__ck_u32(&r, &version) || !moe__ck_u64(&r, &n_tensors) || !moe__ck_u64(&r, &n_kv))
    return moe__ck_fail(err, MOE_ERR_ARG, "gguf: truncated header");
  if (version != 2 && version != 3) return moe__ck_fail(err, MOE_ERR_UNSUPPORTED, "gguf: version %u (2 and 3 are read)", version);
  if (n_kv > (size - r.off) / 13) return moe__ck_fail(err, MOE_ERR_ARG, "gguf: %llu metadata pairs cannot fit in %zu bytes", (unsigned long long)n_kv, size);
  /* metadata, pass 1: structure, general.architecture, general.alignment */
  kv_start = r.off;
  for (uint64_t i = 0; i < n_kv; i++) {
    moe__gguf_kv kv;
    if (!moe__gguf_string(&r, &kv.key, &kv.klen) || !moe__ck_u32(&r, &kv.type))
      return moe__ck_fail(err, MOE_ERR_ARG, "gguf: metadata pair %llu runs past the end of the file", (unsigned long long)i);
    kv.val = r.p + r.off;
    if (!moe__gguf_skip(&r, kv.type, 0))
      return moe__ck_fail(err, MOE_ERR_ARG, "gguf: metadata value %llu (type %u) is malformed or runs past the end", (unsigned long long)i, kv.type);
    if (moe__gguf_key_is(&kv, NULL, "general.architecture")) {
      moe__ck_reader s = {kv.val, (size_t)(r.p + r.off - kv.val), 0};
      if (kv.type != MOE__GGUF_STRING || !moe__gguf_string(&s, &arch, &alen)) return moe__ck_fail(err, MOE_ERR_ARG, "gguf: general.architecture is not a string");
    }
    if (moe__gguf_key_is(&kv, NULL, "general.alignment")) {
      if (kv.type != MOE__GGUF_U32) return moe__ck_fail(err, MOE_ERR_ARG, "gguf: general.alignment is not a u32");
      alignment = (uint32_t)moe__ck_le(kv.val, 4);
      if (!alignment || (alignment & (alignment - 1)) || alignment > (1u << 20))
        return moe__ck_fail(err, MOE_ERR_ARG, "gguf: general.alignment %u is not a power of two up to 2^20", alignment);
    }
  }
  info_start = r.off;
  if (cfg) { /* pass 2: the architecture's keys */
    if (!arch) return moe__ck_fail(err, MOE_ERR_ARG, "gguf: no general.architecture");
    if ((st = moe__gguf_config(cfg, (const char *)arch, (size_t)alen, err)) != MOE_OK) return st;
    r.off = kv_start;
    for (uint64_t i = 0; i < n_kv; i++) {
      moe__gguf_kv kv = {NULL, 0, 0, NULL}; /* pass 1 checked every read */
      moe__gguf_string(&r, &kv.key, &kv.klen), moe__ck_u32(&r, &kv.type);
      kv.val = r.p + r.off;
      moe__gguf_skip(&r, kv.type, 0);
      moe__gguf_config_kv(cfg, &kv);
    }
    if ((st = moe__gguf_config_done(cfg, err)) != MOE_OK) return st;
  }
  /* tensor infos, pass 1: structure and the bytes of the names */
  r.off = info_start;
  if (n_tensors > (size - r.off) / 28) return moe__ck_fail(err, MOE_ERR_ARG, "gguf: %llu tensors cannot fit in %zu bytes", (unsigned long long)n_tensors, size);
  for (uint64_t i = 0; i < n_tensors; i++) {
    uint64_t len, ne, off;
    uint32_t nd, type;
    if (!moe__gguf_string(&r, &b, &len) || len > MOE__GGUF_MAX_NAME || !moe__ck_u32(&r, &nd) || nd < 1 || nd > 4)
      return moe__ck_fail(err, MOE_ERR_ARG, "gguf: tensor info %llu: bad name or dimension count", (unsigned long long)i);
    for (uint32_t d = 0; d < nd; d++)
      if (!moe__ck_u64(&r, &ne) || ne > ((uint64_t)1 << 48)) return moe__ck_fail(err, MOE_ERR_ARG, "gguf: tensor info %llu: bad dimension", (unsigned long long)i);
    if (!moe__ck_u32(&r, &type) || !moe__ck_u64(&r, &off)) return moe__ck_fail(err, MOE_ERR_ARG, "gguf: tensor info %llu runs past the end", (unsigned long long)i);
    names += len + 1;
  }
  data_start = r.off + (alignment - r.off % alignment) % alignment;
  if (data_start > size) return moe__ck_fail(err, MOE_ERR_ARG, "gguf: the data section starts at %zu, past the end (%zu bytes)", data_start, size);
  out->t = (moe_ckpt_tensor *)calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *out->t);
  out->names = (char *)malloc(names ? (size_t)names : 1);
  if (!out->t || !out->names) {
    moe_ckpt_tensors_free(out);
    return moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory for %llu tensors", (unsigned long long)n_tensors);
  }
  /* pass 2: fill and check each range */
  r.off = info_start, names = 0, st = MOE_OK;
  for (uint64_t i = 0; i < n_tensors && st == MOE_OK; i++) {
    moe_ckpt_tensor *t = &out->t[out->n++];
    uint64_t len = 0, ne[4] = {0, 0, 0, 0}, off = 0; /* pass 1 checked every read */
    uint32_t nd = 0, type = 0;
    size_t block, bsize, count = 1, bytes;
    int ok = 1;
    moe__gguf_string(&r, &b, &len);
    memcpy(out->names + names, b, (size_t)len);
    out->names[names + len] = 0;
    t->name = out->names + names;
    names += len + 1;
    if (strlen(t->name) != len) { st = moe__ck_fail(err, MOE_ERR_ARG, "gguf: tensor %llu: a NUL inside its name", (unsigned long long)i); break; }
    moe__ck_u32(&r, &nd);
    for (uint32_t d = 0; d < nd; d++) moe__ck_u64(&r, &ne[d]);
    moe__ck_u32(&r, &type), moe__ck_u64(&r, &off);
    t->n_dims = (int32_t)nd;
    for (uint32_t d = 0; d < nd; d++) {
      t->shape[nd - 1 - d] = (int64_t)ne[d];
      ok = ok && moe__ck_mul(count, (size_t)ne[d], &count);
    }
    moe__gguf_type(type, &t->dtype, &block, &bsize);
    if (!block) continue; /* a type unknown to this reader: not read, no range to check */
    if (!ok || ne[0] % block || !moe__ck_mul(count / block, bsize, &bytes)) {
      st = moe__ck_fail(err, MOE_ERR_ARG, "gguf: tensor %s: shape does not fit type %u", t->name, type);
      break;
    }
    if (off % alignment || off > size - data_start || bytes > size - data_start - off) {
      st = moe__ck_fail(err, MOE_ERR_ARG, "gguf: tensor %s: offset %llu (+%zu bytes) not aligned to %u or past the end", t->name,
                        (unsigned long long)off, bytes, alignment);
      break;
    }
    t->data = file + data_start + off;
    t->bytes = bytes;
  }
  if (st == MOE_OK) st = moe__ck_check_directory(out, err);
  if (st != MOE_OK) moe_ckpt_tensors_free(out);
  return st;
}

/* ==== config.json ====================================================================================
 * Keys as Hugging Face transformers names them in each model's configuration class
 * (src/transformers/models/<model>/configuration_<model>.py) and as the released config.json files
 * spell them; quantization_config as the quantizers write it (transformers utils/quantization_config.py). */
typedef struct moe__ck_json {
  const cJSON *root;
  moe_ckpt_error *err;
  moe_status st;
} moe__ck_json;

/* An integer key (absent: *out keeps its default); a present key of the wrong type is an error. */
static void moe__ck_get_int(moe__ck_json *j, const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  double d;
  if (j->st != MOE_OK || !v || cJSON_IsNull(v)) return;
  d = v->valuedouble;
  if (!cJSON_IsNumber(v) || !(d >= (double)lo && d <= (double)hi) || d != (double)(int64_t)d) { /* range first: then the cast is defined */
    j->st = moe__ck_fail(j->err, MOE_ERR_ARG, "config: %s is not an integer in [%lld, %lld]", key, (long long)lo, (long long)hi);
    return;
  }
  *out = (int64_t)d;
}
static void moe__ck_get_i32(moe__ck_json *j, const cJSON *obj, const char *key, int64_t lo, int64_t hi, int32_t *out) {
  int64_t v = *out;
  moe__ck_get_int(j, obj, key, lo, hi, &v);
  *out = (int32_t)v;
}
static void moe__ck_get_float(moe__ck_json *j, const cJSON *obj, const char *key, float *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (j->st != MOE_OK || !v || cJSON_IsNull(v)) return;
  if (!cJSON_IsNumber(v) || !(v->valuedouble > -1e30 && v->valuedouble < 1e30)) {
    j->st = moe__ck_fail(j->err, MOE_ERR_ARG, "config: %s is not a finite number", key);
    return;
  }
  *out = (float)v->valuedouble;
}
static void moe__ck_get_bool(moe__ck_json *j, const cJSON *obj, const char *key, int32_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (j->st != MOE_OK || !v || cJSON_IsNull(v)) return;
  if (!cJSON_IsBool(v)) {
    j->st = moe__ck_fail(j->err, MOE_ERR_ARG, "config: %s is not true or false", key);
    return;
  }
  *out = cJSON_IsTrue(v);
}
static const char *moe__ck_get_str(const cJSON *obj, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void moe__ck_quant_config(moe__ck_json *j, const cJSON *q, moe_ckpt_config *c) {
  const char *m = moe__ck_get_str(q, "quant_method");
  int64_t bits = 4, group = 128;
  if (!m) {
    j->st = moe__ck_fail(j->err, MOE_ERR_ARG, "config: quantization_config without quant_method");
    return;
  }
  if (!strcmp(m, "fp8")) { /* DeepSeek-V3: {"fmt": "e4m3", "weight_block_size": [128, 128]} */
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
    const char *fmt = moe__ck_get_str(q, "fmt");
    int64_t bn = 128, bk = 128;
    c->quant = MOE_CKPT_QUANT_FP8;
    if (fmt && strcmp(fmt, "e4m3")) j->st = moe__ck_fail(j->err, MOE_ERR_UNSUPPORTED, "config: fp8 format %s (e4m3 is read)", fmt);
    if (bs && (!cJSON_IsArray(bs) || cJSON_GetArraySize(bs) != 2 || !moe__ck_json_u53(cJSON_GetArrayItem(bs, 0), &bn) ||
               !moe__ck_json_u53(cJSON_GetArrayItem(bs, 1), &bk) || bn < 1 || bk < 1 || bn > 65536 || bk > 65536))
      j->st = moe__ck_fail(j->err, MOE_ERR_ARG, "config: weight_block_size is not [rows, cols]");
    if (!bs && j->st == MOE_OK) j->st = moe__ck_fail(j->err, MOE_ERR_UNSUPPORTED, "config: fp8 without weight_block_size (per-tensor fp8)");
    c->block_n = (int32_t)bn, c->block_k = (int32_t)bk;
    return;
  }
  if (!strcmp(m, "mxfp4")) {
    c->quant = MOE_CKPT_QUANT_MXFP4;
    return;
  }
  if (strcmp(m, "awq") && strcmp(m, "gptq")) {
    j->st = moe__ck_fail(j->err, MOE_ERR_UNSUPPORTED, "config: quant_method %s (fp8, awq, gptq and mxfp4 are read)", m);
    return;
  }
  moe__ck_get_int(j, q, "bits", 1, 64, &bits);
  moe__ck_get_int(j, q, "group_size", -1, 1 << 20, &group);
  if (j->st != MOE_OK) return;
  if (bits != 4) j->st = moe__ck_fail(j->err, MOE_ERR_UNSUPPORTED, "config: %s with %lld bits (4 is read)", m, (long long)bits);
  if (group == 0 || group < -1) j->st = moe__ck_fail(j->err, MOE_ERR_ARG, "config: group_size %lld", (long long)group);
  c->bits = (int32_t)bits, c->group = (int32_t)group; /* -1: one group over the whole input */
  if (!strcmp(m, "awq")) {
    const char *version = moe__ck_get_str(q, "version");
    int32_t zero_point = 1;
    c->quant = MOE_CKPT_QUANT_AWQ;
    moe__ck_get_bool(j, q, "zero_point", &zero_point);
    if (version && strcmp(version, "gemm") && strcmp(version, "GEMM"))
      j->st = moe__ck_fail(j->err, MOE_ERR_UNSUPPORTED, "config: AWQ version %s (gemm is read)", version);
    else if (!zero_point) j->st = moe__ck_fail(j->err, MOE_ERR_UNSUPPORTED, "config: AWQ without zero points");
  } else {
    const char *fmt = moe__ck_get_str(q, "checkpoint_format");
    c->quant = MOE_CKPT_QUANT_GPTQ;
    moe__ck_get_bool(j, q, "desc_act", &c->desc_act);
    if (fmt && !strcmp(fmt, "gptq_v2")) c->gptq_v2 = 1;
    else if (fmt && strcmp(fmt, "gptq")) j->st = moe__ck_fail(j->err, MOE_ERR_UNSUPPORTED, "config: GPTQ checkpoint_format %s", fmt);
  }
}

MOE_API moe_status moe_ckpt_parse_config(const char *json, size_t size, moe_ckpt_config *c, moe_ckpt_error *err) {
  static const struct { const char *type; moe_ckpt_arch arch; } archs[] = {
      {"mixtral", MOE_CKPT_MIXTRAL}, {"qwen2_moe", MOE_CKPT_QWEN2_MOE}, {"qwen3_moe", MOE_CKPT_QWEN3_MOE},
      {"deepseek_v3", MOE_CKPT_DEEPSEEK_V3}, {"gpt_oss", MOE_CKPT_GPT_OSS}};
  cJSON *root;
  moe__ck_json j;
  const char *type, *scoring;
  const cJSON *q, *mlp_only, *v;
  const int64_t big = (int64_t)1 << 40;
  int64_t shared_n = 0;
  if (!json || !c) return moe__ck_fail(err, MOE_ERR_NULL, "NULL argument");
  memset(c, 0, sizeof *c);
  root = moe__ck_json_parse(json, size);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return moe__ck_fail(err, MOE_ERR_ARG, "config: not valid JSON, or not an object");
  }
  j.root = root, j.err = err, j.st = MOE_OK;
  type = moe__ck_get_str(root, "model_type");
  if (!type) j.st = moe__ck_fail(err, MOE_ERR_ARG, "config: no model_type");
  else {
    snprintf(c->model_type, sizeof c->model_type, "%s", type);
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
      if (!strcmp(type, archs[i].type)) c->arch = archs[i].arch;
    if (!c->arch) j.st = moe__ck_fail(err, MOE_ERR_UNSUPPORTED, "config: model_type %s (mixtral, qwen2_moe, qwen3_moe, deepseek_v3, gpt_oss are read)", type);
  }
  c->routed_scaling_factor = 1.0f, c->n_group = 1, c->topk_group = 1, c->moe_every = 1;
  moe__ck_get_int(&j, root, "hidden_size", 1, big, &c->hidden);
  moe__ck_get_int(&j, root, "num_hidden_layers", 1, 1 << 20, &c->n_layers);
  moe__ck_get_int(&j, root, "num_experts_per_tok", 1, 1024, &c->topk);
  switch (c->arch) {
  case MOE_CKPT_MIXTRAL: /* MixtralSparseMoeBlock: softmax, top-k, renormalize */
    moe__ck_get_int(&j, root, "num_local_experts", 1, 1024, &c->n_experts);
    moe__ck_get_int(&j, root, "intermediate_size", 1, big, &c->moe_inter);
    c->norm_topk_prob = 1;
    break;
  case MOE_CKPT_QWEN2_MOE:
  case MOE_CKPT_QWEN3_MOE:
    moe__ck_get_int(&j, root, "num_experts", 1, 1024, &c->n_experts);
    moe__ck_get_int(&j, root, "moe_intermediate_size", 1, big, &c->moe_inter);
    moe__ck_get_bool(&j, root, "norm_topk_prob", &c->norm_topk_prob);
    moe__ck_get_int(&j, root, "decoder_sparse_step", 1, 1 << 20, &c->moe_every);
    if (c->arch == MOE_CKPT_QWEN2_MOE) {
      moe__ck_get_int(&j, root, "shared_expert_intermediate_size", 0, big, &c->shared_inter);
      c->shared_gated = c->shared_inter > 0;
    }
    mlp_only = cJSON_GetObjectItemCaseSensitive(root, "mlp_only_layers");
    if (mlp_only && !cJSON_IsNull(mlp_only)) {
      if (!cJSON_IsArray(mlp_only)) j.st = j.st ? j.st : moe__ck_fail(err, MOE_ERR_ARG, "config: mlp_only_layers is not a list");
      else cJSON_ArrayForEach(v, mlp_only) {
        int64_t l;
        if (!moe__ck_json_u53(v, &l)) { j.st = j.st ? j.st : moe__ck_fail(err, MOE_ERR_ARG, "config: mlp_only_layers holds a non-integer"); break; }
        if (l < 256) c->mlp_only[l / 64] |= (uint64_t)1 << (l % 64);
        else { j.st = j.st ? j.st : moe__ck_fail(err, MOE_ERR_UNSUPPORTED, "config: mlp_only_layers names layer %lld (up to 255 are read)", (long long)l); break; }
      }
    }
    break;
  case MOE_CKPT_DEEPSEEK_V3: /* DeepseekV3MoE / DeepseekV3TopkRouter (noaux_tc) */
    moe__ck_get_int(&j, root, "n_routed_experts", 1, 1024, &c->n_experts);
    moe__ck_get_int(&j, root, "moe_intermediate_size", 1, big, &c->moe_inter);
    moe__ck_get_int(&j, root, "n_shared_experts", 0, 1024, &shared_n);
    moe__ck_get_i32(&j, root, "n_group", 1, 1024, &c->n_group);
    moe__ck_get_i32(&j, root, "topk_group", 1, 1024, &c->topk_group);
    moe__ck_get_float(&j, root, "routed_scaling_factor", &c->routed_scaling_factor);
    c->norm_topk_prob = 1;
    moe__ck_get_bool(&j, root, "norm_topk_prob", &c->norm_topk_prob);
    moe__ck_get_int(&j, root, "first_k_dense_replace", 0, 1 << 20, &c->first_dense);
    moe__ck_get_int(&j, root, "moe_layer_freq", 1, 1 << 20, &c->moe_every);
    c->shared_inter = shared_n * c->moe_inter;
    c->sigmoid = 1;
    scoring = moe__ck_get_str(root, "scoring_func");
    if (scoring && strcmp(scoring, "sigmoid")) j.st = j.st ? j.st : moe__ck_fail(err, MOE_ERR_UNSUPPORTED, "config: scoring_func %s (sigmoid is read)", scoring);
    scoring = moe__ck_get_str(root, "topk_method");
    if (scoring && strcmp(scoring, "noaux_tc")) j.st = j.st ? j.st : moe__ck_fail(err, MOE_ERR_UNSUPPORTED, "config: topk_method %s (noaux_tc is read)", scoring);
    break;
  case MOE_CKPT_GPT_OSS: /* GptOssTopKRouter: top-k of the logits, softmax over the k */
    moe__ck_get_int(&j, root, "num_local_experts", 1, 1024, &c->n_experts);
    if (!cJSON_GetObjectItemCaseSensitive(root, "num_experts_per_tok")) moe__ck_get_int(&j, root, "experts_per_token", 1, 1024, &c->topk);
    moe__ck_get_int(&j, root, "intermediate_size", 1, big, &c->moe_inter);
    c->norm_topk_prob = 1, c->swiglu_alpha = 1.702f, c->swiglu_limit = 7.0f;
    moe__ck_get_float(&j, root, "swiglu_limit", &c->swiglu_limit);
    break;
  default: break;
  }
  q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
  if (j.st == MOE_OK && q && !cJSON_IsNull(q)) {
    if (!cJSON_IsObject(q)) j.st = moe__ck_fail(err, MOE_ERR_ARG, "config: quantization_config is not an object");
    else moe__ck_quant_config(&j, q, c);
  }
  if (j.st == MOE_OK && (c->hidden < 1 || c->n_layers < 1 || c->n_experts < 1 || c->topk < 1 || c->moe_inter < 1))
    j.st = moe__ck_fail(err, MOE_ERR_ARG, "config: %s needs hidden_size, num_hidden_layers, the expert count, experts per token and their intermediate size", type);
  if (j.st == MOE_OK && c->topk > c->n_experts) j.st = moe__ck_fail(err, MOE_ERR_ARG, "config: %lld experts per token of %lld", (long long)c->topk, (long long)c->n_experts);
  if (j.st == MOE_OK && (c->topk_group > c->n_group || c->n_experts % c->n_group))
    j.st = moe__ck_fail(err, MOE_ERR_ARG, "config: n_group %d must divide the %lld experts and topk_group %d be at most n_group", c->n_group,
                        (long long)c->n_experts, c->topk_group);
  cJSON_Delete(root);
  return j.st;
}

/* ==== model.safetensors.index.json =====================================================================
 * {"metadata": {"total_size": n}, "weight_map": {"tensor name": "model-00001-of-00002.safetensors"}}
 * (transformers modeling_utils.py, save_pretrained's sharding). A shard must be a plain file name. */
MOE_API void moe_ckpt_index_free(moe_ckpt_index *idx) {
  if (!idx) return;
  for (int64_t i = 0; i < idx->n_files; i++) free(idx->files[i]);
  for (int64_t i = 0; i < idx->n_tensors; i++) free(idx->tensors[i]);
  free(idx->files), free(idx->tensors), free(idx->file_of);
  memset(idx, 0, sizeof *idx);
}

static int moe__ck_plain_name(const char *s) {
  return s[0] && s[0] != '.' && !strchr(s, '/') && !strchr(s, '\\') && strlen(s) < 4096;
}

MOE_API moe_status moe_ckpt_parse_index(const char *json, size_t size, moe_ckpt_index *idx, moe_ckpt_error *err) {
  cJSON *root;
  const cJSON *map, *e;
  int64_t n = 0;
  moe_status st = MOE_OK;
  if (!json || !idx) return moe__ck_fail(err, MOE_ERR_NULL, "NULL argument");
  memset(idx, 0, sizeof *idx);
  root = moe__ck_json_parse(json, size);
  map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
  if (!cJSON_IsObject(root) || !cJSON_IsObject(map)) {
    cJSON_Delete(root);
    return moe__ck_fail(err, MOE_ERR_ARG, "index: not a JSON object with a weight_map object");
  }
  cJSON_ArrayForEach(e, map) n++;
  idx->tensors = (char **)calloc(n ? (size_t)n : 1, sizeof *idx->tensors);
  idx->files = (char **)calloc(n ? (size_t)n : 1, sizeof *idx->files);
  idx->file_of = (int32_t *)calloc(n ? (size_t)n : 1, sizeof *idx->file_of);
  if (!idx->tensors || !idx->files || !idx->file_of) st = moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory for %lld tensors", (long long)n);
  cJSON_ArrayForEach(e, map) {
    int64_t f;
    if (st != MOE_OK) break;
    if (!e->string || !cJSON_IsString(e) || !moe__ck_plain_name(e->valuestring)) {
      st = moe__ck_fail(err, MOE_ERR_ARG, "index: %s does not map to a plain file name", e->string ? e->string : "(a tensor)");
      break;
    }
    for (f = idx->n_files - 1; f >= 0 && strcmp(idx->files[f], e->valuestring); f--) {}
    if (f < 0 && idx->n_files == 65536) { st = moe__ck_fail(err, MOE_ERR_UNSUPPORTED, "index: more than 65536 shards"); break; }
    if (f < 0) { /* shards are few and listed in runs: a linear search from the last one is enough */
      if (!(idx->files[idx->n_files] = strdup(e->valuestring))) { st = moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory"); break; }
      f = idx->n_files++;
    }
    if (!(idx->tensors[idx->n_tensors] = strdup(e->string))) { st = moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory"); break; }
    idx->file_of[idx->n_tensors++] = (int32_t)f;
  }
  cJSON_Delete(root);
  if (st != MOE_OK) moe_ckpt_index_free(idx);
  return st;
}

/* ==== a checkpoint on disk ============================================================================ */
typedef struct moe__ck_map {
  void *p;
  size_t size;
} moe__ck_map;

struct moe_ckpt {
  moe_ckpt_config cfg;
  int gguf;
  moe__ck_map *maps;
  moe_ckpt_tensors *dirs;
  int64_t n_files;
  const moe_ckpt_tensor **by_name; /* every tensor of every file, sorted by name */
  int64_t n;
};

static moe_status moe__ck_map_file(const char *path, moe__ck_map *m, moe_ckpt_error *err) {
  struct stat sb;
  int fd = open(path, O_RDONLY);
  m->p = NULL, m->size = 0;
  if (fd < 0) return moe__ck_fail(err, MOE_ERR_ARG, "%s: cannot open", path);
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0) {
    close(fd);
    return moe__ck_fail(err, MOE_ERR_ARG, "%s: not a regular, non-empty file", path);
  }
  m->size = (size_t)sb.st_size;
  m->p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m->p == MAP_FAILED) {
    m->p = NULL;
    return moe__ck_fail(err, MOE_ERR_ARG, "%s: cannot map %zu bytes", path, m->size);
  }
  return MOE_OK;
}

static int moe__ck_ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), t = strlen(tail);
  return n >= t && !strcmp(s + n - t, tail);
}

/* dir + "/" + name, or NULL when it does not fit PATH_MAX-ish bounds. */
static char *moe__ck_join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  char *p = (a + b + 2 > 8192) ? NULL : (char *)malloc(a + b + 2);
  if (p) memcpy(p, dir, a), p[a] = '/', memcpy(p + a + 1, name, b + 1);
  return p;
}

static moe_status moe__ck_add_file(moe_ckpt *c, const char *path, moe_ckpt_error *err) {
  moe__ck_map *maps = (moe__ck_map *)realloc(c->maps, (size_t)(c->n_files + 1) * sizeof *maps);
  moe_ckpt_tensors *dirs = maps ? (moe_ckpt_tensors *)realloc(c->dirs, (size_t)(c->n_files + 1) * sizeof *dirs) : NULL;
  moe_status st;
  if (maps) c->maps = maps;
  if (!dirs) return moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory");
  c->dirs = dirs;
  memset(&c->dirs[c->n_files], 0, sizeof *dirs);
  if ((st = moe__ck_map_file(path, &c->maps[c->n_files], err)) != MOE_OK) return st;
  c->n_files++;
  if (c->gguf) st = moe_ckpt_parse_gguf((const uint8_t *)c->maps[c->n_files - 1].p, c->maps[c->n_files - 1].size, &c->dirs[c->n_files - 1], &c->cfg, err);
  else st = moe_ckpt_parse_safetensors((const uint8_t *)c->maps[c->n_files - 1].p, c->maps[c->n_files - 1].size, &c->dirs[c->n_files - 1], err);
  if (st != MOE_OK) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
    moe__ck_fail(err, st, "%s: %s", path, msg);
  }
  return st;
}

/* A whole small file (config.json, the index) as a string. */
static moe_status moe__ck_read_text(const char *path, size_t limit, char **out, size_t *size, moe_ckpt_error *err) {
  moe__ck_map m;
  moe_status st = moe__ck_map_file(path, &m, err);
  *out = NULL;
  if (st != MOE_OK) return st;
  if (m.size > limit) st = moe__ck_fail(err, MOE_ERR_ARG, "%s: %zu bytes (limit %zu)", path, m.size, limit);
  else if (!(*out = (char *)malloc(m.size + 1))) st = moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory");
  else memcpy(*out, m.p, m.size), (*out)[m.size] = 0, *size = m.size;
  munmap(m.p, m.size);
  return st;
}

static moe_status moe__ck_read_config(moe_ckpt *c, const char *dir, moe_ckpt_error *err) {
  char *path = moe__ck_join(dir, "config.json"), *text = NULL;
  size_t size = 0;
  moe_status st = path ? moe__ck_read_text(path, (size_t)16 << 20, &text, &size, err) : moe__ck_fail(err, MOE_ERR_ARG, "path too long");
  if (st == MOE_OK) st = moe_ckpt_parse_config(text, size, &c->cfg, err);
  free(path), free(text);
  return st;
}

static moe_status moe__ck_open_shards(moe_ckpt *c, const char *dir, moe_ckpt_error *err) {
  char *path = moe__ck_join(dir, "model.safetensors.index.json"), *text = NULL;
  size_t size = 0;
  moe_ckpt_index idx;
  moe_status st;
  struct stat sb;
  if (!path) return moe__ck_fail(err, MOE_ERR_ARG, "path too long");
  if (stat(path, &sb) != 0) { /* no index: a single model.safetensors */
    free(path);
    if (!(path = moe__ck_join(dir, "model.safetensors"))) return moe__ck_fail(err, MOE_ERR_ARG, "path too long");
    st = moe__ck_add_file(c, path, err);
    free(path);
    return st;
  }
  st = moe__ck_read_text(path, (size_t)256 << 20, &text, &size, err);
  free(path);
  if (st == MOE_OK) st = moe_ckpt_parse_index(text, size, &idx, err);
  free(text);
  if (st != MOE_OK) return st;
  for (int64_t f = 0; f < idx.n_files && st == MOE_OK; f++) {
    if (!(path = moe__ck_join(dir, idx.files[f]))) st = moe__ck_fail(err, MOE_ERR_ARG, "path too long");
    else st = moe__ck_add_file(c, path, err);
    free(path);
  }
  moe_ckpt_index_free(&idx);
  return st;
}

static int moe__ck_cmp_ptr_name(const void *a, const void *b) {
  return strcmp((*(const moe_ckpt_tensor *const *)a)->name, (*(const moe_ckpt_tensor *const *)b)->name);
}

static moe_status moe__ck_build_lookup(moe_ckpt *c, moe_ckpt_error *err) {
  int64_t n = 0;
  for (int64_t f = 0; f < c->n_files; f++) n += c->dirs[f].n;
  c->by_name = (const moe_ckpt_tensor **)malloc((size_t)(n ? n : 1) * sizeof *c->by_name);
  if (!c->by_name) return moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory");
  for (int64_t f = 0; f < c->n_files; f++)
    for (int64_t i = 0; i < c->dirs[f].n; i++) c->by_name[c->n++] = &c->dirs[f].t[i];
  qsort(c->by_name, (size_t)c->n, sizeof *c->by_name, moe__ck_cmp_ptr_name);
  for (int64_t i = 1; i < c->n; i++)
    if (!strcmp(c->by_name[i - 1]->name, c->by_name[i]->name))
      return moe__ck_fail(err, MOE_ERR_ARG, "tensor %s: in two shards", c->by_name[i]->name);
  return MOE_OK;
}

MOE_API moe_status moe_ckpt_open(const char *path, moe_ckpt **out, moe_ckpt_error *err) {
  moe_ckpt *c;
  struct stat sb;
  moe_status st;
  if (!path || !out) return moe__ck_fail(err, MOE_ERR_NULL, "NULL argument");
  *out = NULL;
  if (stat(path, &sb) != 0) return moe__ck_fail(err, MOE_ERR_ARG, "%s: no such file or directory", path);
  if (!(c = (moe_ckpt *)calloc(1, sizeof *c))) return moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory");
  if (S_ISDIR(sb.st_mode)) {
    st = moe__ck_read_config(c, path, err);
    if (st == MOE_OK) st = moe__ck_open_shards(c, path, err);
  } else if (moe__ck_ends_with(path, ".gguf")) {
    c->gguf = 1;
    st = moe__ck_add_file(c, path, err);
  } else { /* one .safetensors file, config.json beside it */
    char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (!dir) st = moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory");
    else {
      if (slash) *slash = 0;
      st = moe__ck_read_config(c, slash ? (dir[0] ? dir : "/") : ".", err);
      if (st == MOE_OK) st = moe__ck_add_file(c, path, err);
    }
    free(dir);
  }
  if (st == MOE_OK) st = moe__ck_build_lookup(c, err);
  if (st != MOE_OK) {
    moe_ckpt_close(c);
    return st;
  }
  *out = c;
  return MOE_OK;
}

MOE_API const moe_ckpt_config *moe_ckpt_config_of(const moe_ckpt *c) { return c ? &c->cfg : NULL; }

MOE_API const moe_ckpt_tensor *moe_ckpt_find(const moe_ckpt *c, const char *name) {
  moe_ckpt_tensor key, *kp = &key;
  const moe_ckpt_tensor **hit;
  if (!c || !name || !c->n) return NULL;
  key.name = name;
  hit = (const moe_ckpt_tensor **)bsearch(&kp, c->by_name, (size_t)c->n, sizeof *c->by_name, moe__ck_cmp_ptr_name);
  return hit ? *hit : NULL;
}

MOE_API void moe_ckpt_close(moe_ckpt *c) {
  if (!c) return;
  for (int64_t f = 0; f < c->n_files; f++) {
    moe_ckpt_tensors_free(&c->dirs[f]);
    if (c->maps[f].p) munmap(c->maps[f].p, c->maps[f].size);
  }
  free(c->maps), free(c->dirs), free(c->by_name), free(c);
}

/* ==== one layer ========================================================================================= */
typedef struct moe__ck_load {
  const moe_ckpt *c;
  moe_ckpt_layer *L;
  moe_ckpt_error *err;
  int64_t layer;
  int no_weights; /* moe_ckpt_load_router: experts described, their tensors checked, nothing imported */
  const moe_parallel *par; /* the experts' imports: the caller's threads, or NULL */
} moe__ck_load;

/* A zeroed buffer of n x size bytes owned by layer L (its next free slot, freed by
 * moe_ckpt_layer_free), or NULL. */
static void *moe__ck_own_in(moe_ckpt_layer *L, size_t n, size_t size) {
  for (size_t i = 0; i < sizeof L->owned_ / sizeof L->owned_[0]; i++)
    if (!L->owned_[i]) return L->owned_[i] = calloc(n ? n : 1, size);
  return NULL;
}
static void *moe__ck_own(moe__ck_load *ld, size_t n, size_t size) { return moe__ck_own_in(ld->L, n, size); }

/* The tensor called by the printf-style name, or NULL (with a message when required). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static const moe_ckpt_tensor *moe__ck_get(moe__ck_load *ld, int required, const char *fmt, ...) {
  char name[512];
  const moe_ckpt_tensor *t;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  t = moe_ckpt_find(ld->c, name);
  if (!t && required) moe__ck_fail(ld->err, MOE_ERR_SHAPE, "tensor %s: missing", name);
  return t;
}

/* t has a dtype in the set `types` (bits 1 << dtype) and the shape [d0, .., d(n-1)]; else a message. */
static int moe__ck_check(moe__ck_load *ld, const moe_ckpt_tensor *t, unsigned types, int n, int64_t d0, int64_t d1, int64_t d2,
                         int64_t d3) {
  const int64_t shape[4] = {d0, d1, d2, d3};
  char want[160], got[160];
  int ok = t->n_dims == n, w = 0, g = 0;
  const int dt = (types >> t->dtype) & 1;
  for (int d = 0; d < n && ok; d++) ok = t->shape[d] == shape[d];
  if (ok && dt && t->data) return 1;
  want[0] = got[0] = 0;
  for (int d = 0; d < n; d++) w += snprintf(want + w, sizeof want - (size_t)w, "%s%lld", d ? ", " : "", (long long)shape[d]);
  for (int d = 0; d < t->n_dims && g < 150; d++) g += snprintf(got + g, sizeof got - (size_t)g, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  if (!dt || !t->data) moe__ck_fail(ld->err, MOE_ERR_UNSUPPORTED, "tensor %s: dtype %s is not read here", t->name, moe_ckpt_dtype_name(t->dtype));
  else moe__ck_fail(ld->err, MOE_ERR_SHAPE, "tensor %s: shape [%s], expected [%s]", t->name, got, want);
  return 0;
}
#define MOE__CK_T(t) (1u << (t))

/* Row r of a float or GGUF block tensor (last dimension cols) as f32. */
static void moe__ck_row_f32(const moe_ckpt_tensor *t, int64_t r, int64_t cols, float *dst) {
  const size_t bsize = moe__ck_types[t->dtype].size, block = moe__ck_types[t->dtype].block;
  const uint8_t *p = t->data + (size_t)r * ((size_t)cols / block) * bsize;
  switch (t->dtype) {
  case MOE_CKPT_F32:
    for (int64_t i = 0; i < cols; i++) {
      uint32_t u = (uint32_t)moe__ck_le(p + 4 * i, 4);
      memcpy(&dst[i], &u, 4);
    }
    return;
  case MOE_CKPT_F16: for (int64_t i = 0; i < cols; i++) dst[i] = moe_f16_to_f32((uint16_t)moe__ck_le(p + 2 * i, 2)); return;
  case MOE_CKPT_BF16: for (int64_t i = 0; i < cols; i++) dst[i] = moe_bf16_to_f32((uint16_t)moe__ck_le(p + 2 * i, 2)); return;
  case MOE_CKPT_Q8_0: case MOE_CKPT_Q4_0: case MOE_CKPT_MXFP4: /* blocks of 32: scale, then codes */
    for (int64_t b = 0; b < cols / 32; b++, p += bsize) {
      const float d = t->dtype == MOE_CKPT_MXFP4 ? moe_e8m0_to_f32(p[0]) : moe_f16_to_f32((uint16_t)moe__ck_le(p, 2));
      for (int j = 0; j < 32; j++) {
        const uint8_t nib = (uint8_t)(p[(t->dtype == MOE_CKPT_MXFP4 ? 1 : 2) + j % 16] >> (4 * (j / 16)) & 15); /* j < 16: low nibble */
        dst[32 * b + j] = t->dtype == MOE_CKPT_Q8_0 ? d * (float)(int8_t)p[2 + j]
                          : t->dtype == MOE_CKPT_Q4_0 ? d * (float)((int)nib - 8) : d * moe_e2m1_to_f32(nib);
      }
    }
    return;
  default: for (int64_t i = 0; i < cols; i++) dst[i] = NAN; return;
  }
}

/* A vector (bias, gate, correction bias): a [n] tensor (or [1, n]) in any float type, to f32. */
static float *moe__ck_vector(moe__ck_load *ld, const moe_ckpt_tensor *t, int64_t n, int allow_2d) {
  const unsigned floats = MOE__CK_T(MOE_CKPT_F32) | MOE__CK_T(MOE_CKPT_F16) | MOE__CK_T(MOE_CKPT_BF16);
  float *v;
  if (!(allow_2d && t->n_dims == 2 ? moe__ck_check(ld, t, floats, 2, 1, n, 0, 0) : moe__ck_check(ld, t, floats, 1, n, 0, 0, 0))) return NULL;
  if (!(v = (float *)moe__ck_own(ld, (size_t)n, sizeof *v))) return moe__ck_fail(ld->err, MOE_ERR_OVERFLOW, "out of memory"), (float *)NULL;
  moe__ck_row_f32(t, 0, n, v);
  return v;
}

/* A matrix [rows, cols] to f32 (the router). */
static float *moe__ck_matrix_f32(moe__ck_load *ld, const moe_ckpt_tensor *t, int64_t rows, int64_t cols) {
  float *m;
  if (!moe__ck_check(ld, t, (MOE__CK_T(MOE_CKPT_F32) | MOE__CK_T(MOE_CKPT_F16) | MOE__CK_T(MOE_CKPT_BF16) | MOE__CK_T(MOE_CKPT_Q8_0)), 2, rows, cols, 0, 0)) return NULL;
  if (!(m = (float *)moe__ck_own(ld, (size_t)(rows * cols), sizeof *m))) return moe__ck_fail(ld->err, MOE_ERR_OVERFLOW, "out of memory"), (float *)NULL;
  for (int64_t r = 0; r < rows; r++) moe__ck_row_f32(t, r, cols, m + r * cols);
  return m;
}

/* The scale block rows of a layer of intermediate size N: the checkpoint's block_n, or, when gate and
 * up would share a block (N not a multiple of it), gcd(block_n, N): each owns its blocks, exactly
 * (moe_import_fp8_block_rows repeats a checkpoint scale over the blocks it covers). */
static int32_t moe__ck_fp8_block_rows(const moe_ckpt_config *c, int64_t N) {
  int64_t a = c->block_n, b = N;
  if (c->block_n < 1 || N < 1) return c->block_n;
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return N % c->block_n == 0 ? c->block_n : (int32_t)a;
}

/* The plain arrays of a moe_weights of precision p, owned by the layer. */
static moe_status moe__ck_alloc_weights(moe__ck_load *ld, moe_weights *w, moe_precision p, int64_t E, int64_t N, int64_t K) {
  const int64_t rows[2] = {2 * N, K}, cols[2] = {K, N};
  if (ld->no_weights) {
    w->E = E, w->N = N, w->K = K, w->precision = p;
    return MOE_OK;
  }
  for (int m = 0; m < 2; m++) {
    const int64_t r = E * rows[m], cl = cols[m];
    void *q = NULL, *scale = NULL, *extra = NULL;
    switch (p) {
    case MOE_PREC_BF16: case MOE_PREC_FP16: q = moe__ck_own(ld, (size_t)(r * cl), 2); scale = q; extra = q; break;
    case MOE_PREC_INT8:
      q = moe__ck_own(ld, (size_t)(r * cl), 1), scale = moe__ck_own(ld, (size_t)r, sizeof(float)), extra = q;
      break;
    case MOE_PREC_FP8: {
      const int64_t nrb = (rows[m] + w->block_n - 1) / w->block_n, ncb = (cl + w->block_k - 1) / w->block_k;
      q = moe__ck_own(ld, (size_t)(r * cl), 1), scale = moe__ck_own(ld, (size_t)(E * nrb * ncb), sizeof(float)), extra = q;
      break;
    }
    case MOE_PREC_INT4_W4A8: case MOE_PREC_INT4_W4A16: {
      const int64_t groups = (cl + w->group - 1) / w->group;
      q = moe__ck_own(ld, (size_t)(r * ((cl + 1) / 2)), 1);
      scale = moe__ck_own(ld, (size_t)(r * groups), sizeof(float)), extra = moe__ck_own(ld, (size_t)(r * groups), 1);
      break;
    }
    case MOE_PREC_MXFP4:
      if (cl % 32) return moe__ck_fail(ld->err, MOE_ERR_SHAPE, "mxfp4: a reduction of %lld, not a multiple of 32", (long long)cl);
      q = moe__ck_own(ld, (size_t)(r * cl / 2), 1), scale = extra = moe__ck_own(ld, (size_t)(r * cl / 32), 1);
      break;
    default: return moe__ck_fail(ld->err, MOE_ERR_UNSUPPORTED, "precision %d", (int)p);
    }
    if (!q || !scale || !extra) return moe__ck_fail(ld->err, MOE_ERR_OVERFLOW, "out of memory for the layer's weights");
    if (m == 0) w->w13 = q; else w->w2 = q;
    if (p == MOE_PREC_INT8 || p == MOE_PREC_FP8 || p == MOE_PREC_INT4_W4A8 || p == MOE_PREC_INT4_W4A16) {
      if (m == 0) w->w13_scale = (const float *)scale; else w->w2_scale = (const float *)scale;
    }
    if (p == MOE_PREC_INT4_W4A8 || p == MOE_PREC_INT4_W4A16) {
      if (m == 0) w->w13_zero = (const uint8_t *)extra; else w->w2_zero = (const uint8_t *)extra;
    }
    if (p == MOE_PREC_MXFP4) {
      if (m == 0) w->w13_e8m0 = (const uint8_t *)extra; else w->w2_e8m0 = (const uint8_t *)extra;
    }
  }
  w->E = E, w->N = N, w->K = K, w->precision = p;
  return MOE_OK;
}

/* One checkpoint matrix [rows, cols] of one expert, as the file stores it. */
typedef enum moe__ck_kind {
  MOE__CK_FLOAT,     /* w: F32/F16/BF16                                                           */
  MOE__CK_FP8,       /* w: F8_E4M3, s: weight_scale_inv                                          */
  MOE__CK_AWQ,       /* w: qweight, z: qzeros, s: scales                                         */
  MOE__CK_GPTQ,      /* w: qweight, z: qzeros, s: scales, g: g_idx (optional)                     */
  MOE__CK_OAI_MXFP4, /* w: *_blocks, s: *_scales (gpt-oss)                                       */
  MOE__CK_GGUF       /* w: a block or float tensor; rows from row_off                            */
} moe__ck_kind;

typedef struct moe__ck_mat {
  moe__ck_kind kind;
  const moe_ckpt_tensor *w, *s, *z, *g;
  int64_t rows, cols;
  int64_t expert;     /* slice of w (and s) for the 3-D tensors of gpt-oss and GGUF             */
  int interleaved;    /* gpt-oss gate_up_proj                                                   */
} moe__ck_mat;

static moe_dtype moe__ck_float_type(moe_ckpt_dtype t) { return t == MOE_CKPT_F16 ? MOE_F16 : t == MOE_CKPT_BF16 ? MOE_BF16 : MOE_F32; }

/* GGUF block rows -> the plain int4 (Q4_0: zero 8, group 32) or mxfp4 layout: the block's
 * element j is in byte j % 16, low nibble for j < 16; the plain layout puts column c in byte c / 2,
 * low nibble for even c. */
static void moe__ck_gguf_nibbles(const uint8_t *blk, int qs_at, uint8_t *dst_row, int64_t b) {
  for (int j = 0; j < 32; j += 2) {
    uint8_t lo = (uint8_t)((blk[qs_at + j % 16] >> (4 * (j / 16))) & 15), hi = (uint8_t)((blk[qs_at + (j + 1) % 16] >> (4 * ((j + 1) / 16))) & 15);
    dst_row[b * 16 + j / 2] = (uint8_t)(lo | hi << 4);
  }
}

/* Fills rows [row0, row0 + m->rows) of expert e of matrix `mat` (0: W13, 1: W2) of w. */
static moe_status moe__ck_put(moe__ck_load *ld, moe_weights *w, int mat, int64_t e, int64_t row0, const moe__ck_mat *m) {
  if (ld->no_weights) return MOE_OK;
  const int64_t dst_rows = mat ? w->K : 2 * w->N, cols = m->cols, rows = m->rows;
  uint8_t *q = (uint8_t *)(mat ? w->w2 : w->w13);
  float *scale = (float *)(mat ? w->w2_scale : w->w13_scale);
  uint8_t *zero = (uint8_t *)(mat ? w->w2_zero : w->w13_zero), *e8 = (uint8_t *)(mat ? w->w2_e8m0 : w->w13_e8m0);
  moe_status st = MOE_OK;
  switch (w->precision) {
  case MOE_PREC_FP8: {
    const int64_t nrb = (dst_rows + w->block_n - 1) / w->block_n, ncb = (cols + w->block_k - 1) / w->block_k;
    st = moe_import_fp8_block_rows(m->w->data, m->s->data, rows, cols, ld->c->cfg.block_n, w->block_k, w->block_n,
                                   q + (size_t)(e * dst_rows * cols), scale + e * nrb * ncb, dst_rows, row0);
    break;
  }
  case MOE_PREC_INT4_W4A8: case MOE_PREC_INT4_W4A16: {
    const int64_t groups = (cols + w->group - 1) / w->group, rb = (cols + 1) / 2;
    uint8_t *qe = q + (size_t)(e * dst_rows * rb);
    float *se = scale + e * dst_rows * groups;
    uint8_t *ze = zero + e * dst_rows * groups;
    if (m->kind == MOE__CK_AWQ)
      st = moe_import_awq(m->w->data, m->z->data, m->s->data, moe__ck_float_type(m->s->dtype), rows, cols, w->group, qe, se, ze, dst_rows, row0);
    else if (m->kind == MOE__CK_GPTQ) {
      uint8_t *v1 = NULL;
      const void *qz = m->z->data;
      if (ld->c->cfg.gptq_v2) { /* GPTQModel v2 stores zero points as they are: back to v1 (minus 0x11111111 per word) */
        if (!(v1 = (uint8_t *)malloc(m->z->bytes))) return moe__ck_fail(ld->err, MOE_ERR_OVERFLOW, "out of memory");
        for (size_t i = 0; i + 4 <= m->z->bytes; i += 4) {
          uint32_t word = (uint32_t)moe__ck_le(m->z->data + i, 4) - 0x11111111u;
          for (int k = 0; k < 4; k++) v1[i + (size_t)k] = (uint8_t)(word >> (8 * k));
        }
        qz = v1;
      }
      st = moe_import_gptq(m->w->data, qz, m->s->data, moe__ck_float_type(m->s->dtype), m->g ? m->g->data : NULL, 4, rows, cols,
                           w->group, qe, se, ze, dst_rows, row0);
      free(v1);
    } else { /* GGUF Q4_0 */
      const size_t rowb = (size_t)(cols / 32) * 18;
      for (int64_t r = 0; r < rows; r++) {
        const uint8_t *src = m->w->data + (size_t)(m->expert * rows + r) * rowb;
        for (int64_t b = 0; b < cols / 32; b++) {
          moe__ck_gguf_nibbles(src + b * 18, 2, qe + (row0 + r) * rb, b);
          se[(row0 + r) * groups + b] = moe_f16_to_f32((uint16_t)moe__ck_le(src + b * 18, 2));
          ze[(row0 + r) * groups + b] = 8;
        }
      }
    }
    break;
  }
  case MOE_PREC_MXFP4: {
    uint8_t *qe = q + (size_t)(e * dst_rows * cols / 2), *ee = e8 + e * dst_rows * (cols / 32);
    if (m->kind == MOE__CK_OAI_MXFP4)
      st = moe_import_mxfp4(m->w->data + (size_t)(m->expert * rows * cols / 2), m->s->data + (size_t)(m->expert * rows * (cols / 32)), rows, cols,
                            m->interleaved, qe, ee, dst_rows, row0);
    else {
      const size_t rowb = (size_t)(cols / 32) * 17;
      for (int64_t r = 0; r < rows; r++) {
        const uint8_t *src = m->w->data + (size_t)(m->expert * rows + r) * rowb;
        for (int64_t b = 0; b < cols / 32; b++) {
          moe__ck_gguf_nibbles(src + b * 17, 1, qe + (row0 + r) * (cols / 2), b);
          ee[(row0 + r) * (cols / 32) + b] = src[b * 17];
        }
      }
    }
    break;
  }
  case MOE_PREC_INT8: { /* GGUF Q8_0 -> int8 per output channel (requantized) */
    float *row = (float *)malloc((size_t)cols * 2 * sizeof(float)), *back = row + cols;
    int8_t *qe = (int8_t *)q + (size_t)(e * dst_rows * cols);
    if (!row) return moe__ck_fail(ld->err, MOE_ERR_OVERFLOW, "out of memory");
    for (int64_t r = 0; r < rows; r++) {
      double amax = 0, dmax = 0;
      int8_t *qr = qe + (row0 + r) * cols;
      float *sr = scale + e * dst_rows + row0 + r;
      moe__ck_row_f32(m->w, m->expert * rows + r, cols, row);
      moe_quantize_weight_int8(row, 1, 1, cols, qr, sr);
      for (int64_t i = 0; i < cols; i++) {
        back[i] = (float)qr[i] * *sr;
        amax = fmax(amax, fabs(row[i])), dmax = fmax(dmax, fabs((double)back[i] - row[i]));
      }
      if (amax > 0 && dmax / amax > ld->L->requant_rel_err) ld->L->requant_rel_err = dmax / amax;
    }
    free(row);
    break;
  }
  default: { /* bf16 / fp16 */
    uint16_t *qe = (uint16_t *)(void *)q + (size_t)(e * dst_rows * cols);
    float *row = (float *)malloc((size_t)cols * sizeof(float));
    if (!row) return moe__ck_fail(ld->err, MOE_ERR_OVERFLOW, "out of memory");
    for (int64_t r = 0; r < rows; r++) {
      uint16_t *dr = qe + (row0 + r) * cols;
      const int64_t src_row = m->expert * rows + r;
      if ((w->precision == MOE_PREC_BF16 && m->w->dtype == MOE_CKPT_BF16) || (w->precision == MOE_PREC_FP16 && m->w->dtype == MOE_CKPT_F16)) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(dr, m->w->data + 2 * (size_t)(src_row * cols), 2 * (size_t)cols); /* the file's order is the host's */
#else
        for (int64_t i = 0; i < cols; i++) dr[i] = (uint16_t)moe__ck_le(m->w->data + 2 * (size_t)(src_row * cols + i), 2);
#endif
      }
      else { /* F32 (or a GGUF float type) rounded to bf16 */
        moe__ck_row_f32(m->w, src_row, cols, row);
        for (int64_t i = 0; i < cols; i++) dr[i] = moe_f32_to_bf16(row[i]);
      }
    }
    free(row);
    break;
  }
  }
  if (st == MOE_ERR_UNSUPPORTED && m->kind == MOE__CK_GPTQ && m->g)
    return moe__ck_fail(ld->err, st, "tensor %s: act-order (desc_act) g_idx is not read: the plain int4 layout scales contiguous groups", m->g->name);
  if (st != MOE_OK) return moe__ck_fail(ld->err, st, "tensor %s: %s", m->w->name, moe_status_str(st));
  return MOE_OK;
}

/* ---- Hugging Face names -------------------------------------------------------------------------
 * Per layer L (transformers modeling_<model>.py module names; quantized variants as AutoAWQ,
 * GPTQ and DeepSeek's FP8 checkpoints name their buffers):
 *   mixtral      model.layers.L.block_sparse_moe.gate.weight, ....experts.J.{w1 gate, w3 up, w2 down}.weight
 *   qwen2_moe    model.layers.L.mlp.gate.weight, mlp.experts.J.{gate,up,down}_proj.weight,
 *                mlp.shared_expert.{gate,up,down}_proj.weight, mlp.shared_expert_gate.weight [1, K]
 *   qwen3_moe    as qwen2_moe without the shared expert
 *   deepseek_v3  as qwen2_moe with mlp.gate.e_score_correction_bias [E] and mlp.shared_experts.*;
 *                fp8: each weight with a weight_scale_inv
 *   gpt_oss      model.layers.L.mlp.router.{weight,bias}, mlp.experts.{gate_up_proj,down_proj}_{blocks,scales,bias}
 *   AWQ / GPTQ   <module>.qweight, .qzeros, .scales (GPTQ: .g_idx) in place of <module>.weight */
static moe_status moe__ck_hf_matrix(moe__ck_load *ld, const char *module, int64_t rows, int64_t cols, moe_ckpt_dtype float_type,
                                    moe__ck_mat *m) {
  const moe_ckpt_config *c = &ld->c->cfg;
  const int64_t group = c->group == -1 ? cols : c->group;
  memset(m, 0, sizeof *m);
  m->rows = rows, m->cols = cols;
  switch (c->quant) {
  case MOE_CKPT_QUANT_FP8:
    m->kind = MOE__CK_FP8;
    if (!(m->w = moe__ck_get(ld, 1, "%s.weight", module)) || !(m->s = moe__ck_get(ld, 1, "%s.weight_scale_inv", module))) return MOE_ERR_SHAPE;
    if (!moe__ck_check(ld, m->w, (MOE__CK_T(MOE_CKPT_F8_E4M3)), 2, rows, cols, 0, 0) ||
        !moe__ck_check(ld, m->s, (MOE__CK_T(MOE_CKPT_F32)), 2, (rows + c->block_n - 1) / c->block_n, (cols + c->block_k - 1) / c->block_k, 0, 0))
      return MOE_ERR_SHAPE;
    return MOE_OK;
  case MOE_CKPT_QUANT_AWQ: case MOE_CKPT_QUANT_GPTQ: {
    const int awq = c->quant == MOE_CKPT_QUANT_AWQ;
    m->kind = awq ? MOE__CK_AWQ : MOE__CK_GPTQ;
    if (rows % 8 || (!awq && cols % 8) || (awq && cols % group))
      return moe__ck_fail(ld->err, MOE_ERR_SHAPE, "%s: %lld x %lld does not fit %s's packing (group %lld)", module, (long long)rows, (long long)cols,
                          awq ? "AWQ" : "GPTQ", (long long)group);
    if (!(m->w = moe__ck_get(ld, 1, "%s.qweight", module)) || !(m->z = moe__ck_get(ld, 1, "%s.qzeros", module)) ||
        !(m->s = moe__ck_get(ld, 1, "%s.scales", module)))
      return MOE_ERR_SHAPE;
    if (!moe__ck_check(ld, m->w, (MOE__CK_T(MOE_CKPT_I32)), 2, awq ? cols : cols / 8, awq ? rows / 8 : rows, 0, 0) ||
        !moe__ck_check(ld, m->z, (MOE__CK_T(MOE_CKPT_I32)), 2, (cols + group - 1) / group, rows / 8, 0, 0) ||
        !moe__ck_check(ld, m->s, (MOE__CK_T(MOE_CKPT_F16) | MOE__CK_T(MOE_CKPT_BF16) | MOE__CK_T(MOE_CKPT_F32)), 2, (cols + group - 1) / group, rows, 0, 0))
      return MOE_ERR_SHAPE;
    if (!awq && (m->g = moe__ck_get(ld, 0, "%s.g_idx", module)) && !moe__ck_check(ld, m->g, (MOE__CK_T(MOE_CKPT_I32)), 1, cols, 0, 0, 0))
      return MOE_ERR_SHAPE;
    return MOE_OK;
  }
  default:
    m->kind = MOE__CK_FLOAT;
    if (!(m->w = moe__ck_get(ld, 1, "%s.weight", module))) return MOE_ERR_SHAPE;
    return moe__ck_check(ld, m->w, MOE__CK_T(float_type), 2, rows, cols, 0, 0) ? MOE_OK : MOE_ERR_SHAPE;
  }
}

/* The gate, up and down projections of an HF MLP module, found and checked. */
static moe_status moe__ck_hf_mats(moe__ck_load *ld, const moe_weights *w, const char *prefix, moe_ckpt_dtype float_type,
                                  moe__ck_mat m[3]) {
  const int mixtral = ld->c->cfg.arch == MOE_CKPT_MIXTRAL && strstr(prefix, ".experts.");
  const char *names[3] = {mixtral ? "w1" : "gate_proj", mixtral ? "w3" : "up_proj", mixtral ? "w2" : "down_proj"};
  char module[512];
  moe_status st;
  for (int p = 0; p < 3; p++) {
    snprintf(module, sizeof module, "%s.%s", prefix, names[p]);
    if ((st = moe__ck_hf_matrix(ld, module, p < 2 ? w->N : w->K, p < 2 ? w->K : w->N, float_type, &m[p])) != MOE_OK) return st;
  }
  return MOE_OK;
}
/* The three projections into expert e of w's plain arrays. */
static moe_status moe__ck_hf_put(moe__ck_load *ld, moe_weights *w, int64_t e, const moe__ck_mat m[3]) {
  moe_status st;
  for (int p = 0; p < 3; p++)
    if ((st = moe__ck_put(ld, w, p == 2, e, p == 1 ? w->N : 0, &m[p])) != MOE_OK) return st;
  return MOE_OK;
}
/* The MLP under `prefix` (...experts.J or ...shared_expert) into expert e of w; dry: only check its tensors. */
static moe_status moe__ck_hf_mlp(moe__ck_load *ld, moe_weights *w, int64_t e, const char *prefix, moe_ckpt_dtype float_type, int dry) {
  moe__ck_mat m[3];
  moe_status st = moe__ck_hf_mats(ld, w, prefix, float_type, m);
  return st != MOE_OK || dry ? st : moe__ck_hf_put(ld, w, e, m);
}

/* fn(arg, i) for every i in [0, n) on par's threads: its pool, else OpenMP's (par->n_threads of
 * them, or all), else in order on this thread. */
static void moe__ck_parallel(const moe_parallel *par, void (*fn)(void *, int64_t), void *arg, int64_t n) {
  int64_t i;
  if (par->parallel_for) {
    par->parallel_for(par->pool, fn, arg, n);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(par->n_threads > 0 ? par->n_threads : omp_get_max_threads())
#endif
  for (i = 0; i < n; i++) fn(arg, i);
}

/* Imports expert e of a layer (after every tensor was checked). */
typedef moe_status (*moe__ck_expert_fn)(moe__ck_load *ld, const void *ctx, int64_t e);
typedef struct moe__ck_experts_job {
  moe__ck_load *ld;
  moe__ck_expert_fn one;
  const void *ctx;
  moe_status *st; /* [E] */
} moe__ck_experts_job;
static void moe__ck_expert_item(void *arg, int64_t e) {
  const moe__ck_experts_job *J = (const moe__ck_experts_job *)arg;
  moe_ckpt_error scratch; /* each item its own message: the caller's is written once, below */
  moe__ck_load ld = *J->ld;
  ld.err = &scratch;
  J->st[e] = J->one(&ld, J->ctx, e);
}
/* Experts 0..E-1 through one(), on ld->par's threads (each expert writes only its own rows and
 * scales); a failure is redone alone for the lowest failing expert, so the message is the same for
 * any thread count. */
static moe_status moe__ck_experts(moe__ck_load *ld, int64_t E, moe__ck_expert_fn one, const void *ctx) {
  moe__ck_experts_job J;
  moe_status *st;
  if (!ld->par || E < 2) {
    for (int64_t e = 0; e < E; e++) {
      moe_status s = one(ld, ctx, e);
      if (s != MOE_OK) return s;
    }
    return MOE_OK;
  }
  if (!(st = (moe_status *)calloc((size_t)E, sizeof *st))) return moe__ck_fail(ld->err, MOE_ERR_OVERFLOW, "out of memory");
  J.ld = ld, J.one = one, J.ctx = ctx, J.st = st;
  moe__ck_parallel(ld->par, moe__ck_expert_item, &J, E);
  for (int64_t e = 0; e < E; e++)
    if (st[e] != MOE_OK) {
      free(st);
      return one(ld, ctx, e);
    }
  free(st);
  return MOE_OK;
}

/* Expert e of an HF layer: its MLP under ctx (the layer prefix) + ".experts.e". */
typedef struct moe__ck_hf_experts {
  moe_weights *w;
  const char *prefix;
  moe_ckpt_dtype dt;
} moe__ck_hf_experts;
static moe_status moe__ck_hf_expert(moe__ck_load *ld, const void *ctx, int64_t e) {
  const moe__ck_hf_experts *x = (const moe__ck_hf_experts *)ctx;
  char module[256];
  snprintf(module, sizeof module, "%s.experts.%lld", x->prefix, (long long)e);
  return moe__ck_hf_mlp(ld, x->w, e, module, x->dt, 0);
}

/* What the file's weights are exactly, as a precision; `want` may pick W4A8 for int4 files. */
static moe_status moe__ck_precision(moe__ck_load *ld, moe_ckpt_dtype dt, int want, moe_precision *p) {
  moe_precision auto_p;
  switch (dt) {
  case MOE_CKPT_BF16: case MOE_CKPT_F32: auto_p = MOE_PREC_BF16; break;
  case MOE_CKPT_F16: auto_p = MOE_PREC_FP16; break;
  case MOE_CKPT_F8_E4M3: auto_p = MOE_PREC_FP8; break;
  case MOE_CKPT_I32: case MOE_CKPT_Q4_0: auto_p = MOE_PREC_INT4_W4A16; break; /* AWQ/GPTQ qweight, Q4_0 */
  case MOE_CKPT_U8: case MOE_CKPT_MXFP4: auto_p = MOE_PREC_MXFP4; break;      /* gpt-oss blocks, GGUF MXFP4 */
  case MOE_CKPT_Q8_0: auto_p = MOE_PREC_INT8; break;
  default: return moe__ck_fail(ld->err, MOE_ERR_UNSUPPORTED, "expert weights of dtype %s are not converted", moe_ckpt_dtype_name(dt));
  }
  *p = auto_p;
  if (want == MOE_CKPT_AUTO || want == (int)auto_p) return MOE_OK;
  if (auto_p == MOE_PREC_INT4_W4A16 && want == MOE_PREC_INT4_W4A8) return *p = MOE_PREC_INT4_W4A8, MOE_OK;
  return moe__ck_fail(ld->err, MOE_ERR_UNSUPPORTED, "the file holds %s weights; %s was asked for", moe_precision_name(auto_p),
                      moe_precision_name((moe_precision)want) ? moe_precision_name((moe_precision)want) : "an unknown precision");
}

static void moe__ck_describe(moe__ck_load *ld, moe_ckpt_dtype dt, const moe_weights *w) {
  moe_ckpt_layer *L = ld->L;
  const char *what = moe_precision_name(w->precision);
  switch (w->precision) {
  case MOE_PREC_FP8: snprintf(L->how, sizeof L->how, "fp8 e4m3, %dx%d scale blocks (exact)", w->block_n, w->block_k); break;
  case MOE_PREC_INT4_W4A8: case MOE_PREC_INT4_W4A16:
    snprintf(L->how, sizeof L->how, "%s from %s, group %d (weights exact)", what, dt == MOE_CKPT_Q4_0 ? "GGUF Q4_0" : ld->c->cfg.quant == MOE_CKPT_QUANT_AWQ ? "AWQ" : "GPTQ", w->group);
    break;
  case MOE_PREC_MXFP4: snprintf(L->how, sizeof L->how, "mxfp4 e2m1 + e8m0 per 32 (exact)"); break;
  case MOE_PREC_INT8: snprintf(L->how, sizeof L->how, "int8 per channel, requantized from GGUF Q8_0 (blocks of 32)"); break;
  default: snprintf(L->how, sizeof L->how, "%s from %s%s", what, moe_ckpt_dtype_name(dt), dt == MOE_CKPT_F32 ? " (rounded to bf16)" : " (exact)"); break;
  }
}

static int moe__ck_is_moe_layer(const moe_ckpt_config *c, int64_t layer) {
  if (layer < c->first_dense) return 0;
  switch (c->arch) {
  case MOE_CKPT_QWEN2_MOE: case MOE_CKPT_QWEN3_MOE: /* Qwen2MoeDecoderLayer */
    if (layer < 256 && (c->mlp_only[layer / 64] >> (layer % 64) & 1)) return 0;
    return (layer + 1) % c->moe_every == 0;
  case MOE_CKPT_DEEPSEEK_V3: return layer % c->moe_every == 0; /* DeepseekV3DecoderLayer */
  default: return 1;
  }
}

/* The biases of gpt-oss: b13 [E, 2N] (gate rows, then up rows) and b2 [E, K]. */
static moe_status moe__ck_biases(moe__ck_load *ld, moe_weights *w, const moe_ckpt_tensor *b_gate, const moe_ckpt_tensor *b_up,
                                 const moe_ckpt_tensor *b_down) {
  float *b13, *b2;
  if (ld->no_weights) return MOE_OK; /* the packed experts hold their biases */
  b13 = (float *)moe__ck_own(ld, (size_t)(w->E * 2 * w->N), sizeof(float)), b2 = (float *)moe__ck_own(ld, (size_t)(w->E * w->K), sizeof(float));
  const int interleaved = b_up == NULL; /* HF: one gate_up_proj_bias [E, 2N], gate/up interleaved */
  if (!b13 || !b2) return moe__ck_fail(ld->err, MOE_ERR_OVERFLOW, "out of memory");
  if (!moe__ck_check(ld, b_gate, (MOE__CK_T(MOE_CKPT_F32) | MOE__CK_T(MOE_CKPT_F16) | MOE__CK_T(MOE_CKPT_BF16)), 2, w->E, interleaved ? 2 * w->N : w->N, 0, 0) ||
      (b_up && !moe__ck_check(ld, b_up, (MOE__CK_T(MOE_CKPT_F32) | MOE__CK_T(MOE_CKPT_F16) | MOE__CK_T(MOE_CKPT_BF16)), 2, w->E, w->N, 0, 0)) ||
      !moe__ck_check(ld, b_down, (MOE__CK_T(MOE_CKPT_F32) | MOE__CK_T(MOE_CKPT_F16) | MOE__CK_T(MOE_CKPT_BF16)), 2, w->E, w->K, 0, 0))
    return MOE_ERR_SHAPE;
  for (int64_t e = 0; e < w->E; e++) {
    if (interleaved) moe_import_bias(b_gate->data + (size_t)(e * 2 * w->N) * moe__ck_types[b_gate->dtype].size, moe__ck_float_type(b_gate->dtype), 2 * w->N, 1, b13 + e * 2 * w->N);
    else {
      moe__ck_row_f32(b_gate, e, w->N, b13 + e * 2 * w->N);
      moe__ck_row_f32(b_up, e, w->N, b13 + e * 2 * w->N + w->N);
    }
    moe__ck_row_f32(b_down, e, w->K, b2 + e * w->K);
  }
  w->b13 = b13, w->b2 = b2;
  return MOE_OK;
}

/* The HF shared expert's module under the layer prefix. */
static void moe__ck_hf_shared_module(const moe__ck_load *ld, const char *prefix, char *module, size_t n) {
  snprintf(module, n, "%s.%s", prefix, ld->c->cfg.arch == MOE_CKPT_DEEPSEEK_V3 ? "shared_experts" : "shared_expert");
}
/* The HF layer prefix ("model.layers.L.mlp" or "...block_sparse_moe"). */
static void moe__ck_hf_prefix(const moe__ck_load *ld, char *prefix, size_t n) {
  snprintf(prefix, n, "model.layers.%lld.%s", (long long)ld->layer, ld->c->cfg.arch == MOE_CKPT_MIXTRAL ? "block_sparse_moe" : "mlp");
}
/* The dtype of the routed experts' weights (expert 0's first matrix for float files). */
static moe_status moe__ck_hf_expert_dtype(moe__ck_load *ld, const char *prefix, moe_ckpt_dtype *dt) {
  const moe_ckpt_config *c = &ld->c->cfg;
  const moe_ckpt_tensor *t;
  *dt = c->quant == MOE_CKPT_QUANT_FP8 ? MOE_CKPT_F8_E4M3 : c->quant == MOE_CKPT_QUANT_AWQ || c->quant == MOE_CKPT_QUANT_GPTQ ? MOE_CKPT_I32 : MOE_CKPT_OTHER;
  if (*dt != MOE_CKPT_OTHER) return MOE_OK;
  if (c->quant == MOE_CKPT_QUANT_MXFP4) return moe__ck_fail(ld->err, MOE_ERR_UNSUPPORTED, "mxfp4 quantization for %s", c->model_type);
  if (!(t = moe__ck_get(ld, 1, "%s.experts.0.%s.weight", prefix, c->arch == MOE_CKPT_MIXTRAL ? "w1" : "gate_proj"))) return MOE_ERR_SHAPE;
  *dt = t->dtype;
  if (*dt != MOE_CKPT_BF16 && *dt != MOE_CKPT_F16 && *dt != MOE_CKPT_F32) return moe__ck_fail(ld->err, MOE_ERR_UNSUPPORTED, "tensor %s: dtype %s", t->name, moe_ckpt_dtype_name(*dt));
  return MOE_OK;
}

/* Expert e of gpt-oss's stacked MXFP4 tensors (gate_up blocks, scales, down blocks, scales). */
typedef struct moe__ck_oai_experts {
  moe_weights *w;
  const moe_ckpt_tensor *t[4];
} moe__ck_oai_experts;
static moe_status moe__ck_oai_expert(moe__ck_load *ld, const void *ctx, int64_t e) {
  const moe__ck_oai_experts *x = (const moe__ck_oai_experts *)ctx;
  moe__ck_mat m;
  moe_status st;
  memset(&m, 0, sizeof m);
  m.kind = MOE__CK_OAI_MXFP4, m.w = x->t[0], m.s = x->t[1], m.rows = 2 * x->w->N, m.cols = x->w->K, m.expert = e, m.interleaved = 1;
  if ((st = moe__ck_put(ld, x->w, 0, e, 0, &m)) != MOE_OK) return st;
  m.w = x->t[2], m.s = x->t[3], m.rows = x->w->K, m.cols = x->w->N, m.interleaved = 0;
  return moe__ck_put(ld, x->w, 1, e, 0, &m);
}

static moe_status moe__ck_layer_hf(moe__ck_load *ld, int precision) {
  const moe_ckpt_config *c = &ld->c->cfg;
  moe_ckpt_layer *L = ld->L;
  const int64_t E = c->n_experts, K = c->hidden, N = c->moe_inter;
  char prefix[128], module[256];
  const moe_ckpt_tensor *t;
  moe_ckpt_dtype dt;
  moe_precision p;
  moe_status st;
  moe__ck_hf_prefix(ld, prefix, sizeof prefix);
  /* router */
  if (!(t = moe__ck_get(ld, 1, "%s.%s.weight", prefix, c->arch == MOE_CKPT_GPT_OSS ? "router" : "gate")) ||
      !(L->router_w = moe__ck_matrix_f32(ld, t, E, K)))
    return MOE_ERR_SHAPE;
  if (c->arch == MOE_CKPT_GPT_OSS && (!(t = moe__ck_get(ld, 1, "%s.router.bias", prefix)) || !(L->router_b = moe__ck_vector(ld, t, E, 0))))
    return MOE_ERR_SHAPE;
  if (c->arch == MOE_CKPT_DEEPSEEK_V3 &&
      (!(t = moe__ck_get(ld, 1, "%s.gate.e_score_correction_bias", prefix)) || !(L->correction_bias = moe__ck_vector(ld, t, E, 0))))
    return MOE_ERR_SHAPE;
  /* experts */
  if (c->arch == MOE_CKPT_GPT_OSS) {
    const moe_ckpt_tensor *gb, *gs, *db, *ds;
    if (c->quant != MOE_CKPT_QUANT_MXFP4) return moe__ck_fail(ld->err, MOE_ERR_UNSUPPORTED, "gpt_oss without mxfp4 experts (the bf16 release) is not read");
    if (K % 32 || N % 32) return moe__ck_fail(ld->err, MOE_ERR_SHAPE, "gpt_oss: hidden %lld and intermediate %lld must be multiples of 32", (long long)K, (long long)N);
    if (!(gb = moe__ck_get(ld, 1, "%s.experts.gate_up_proj_blocks", prefix)) || !(gs = moe__ck_get(ld, 1, "%s.experts.gate_up_proj_scales", prefix)) ||
        !(db = moe__ck_get(ld, 1, "%s.experts.down_proj_blocks", prefix)) || !(ds = moe__ck_get(ld, 1, "%s.experts.down_proj_scales", prefix)))
      return MOE_ERR_SHAPE;
    if (!moe__ck_check(ld, gb, (MOE__CK_T(MOE_CKPT_U8)), 4, E, 2 * N, K / 32, 16) || !moe__ck_check(ld, gs, (MOE__CK_T(MOE_CKPT_U8)), 3, E, 2 * N, K / 32, 0) ||
        !moe__ck_check(ld, db, (MOE__CK_T(MOE_CKPT_U8)), 4, E, K, N / 32, 16) || !moe__ck_check(ld, ds, (MOE__CK_T(MOE_CKPT_U8)), 3, E, K, N / 32, 0))
      return MOE_ERR_SHAPE;
    if ((st = moe__ck_precision(ld, MOE_CKPT_U8, precision, &p)) != MOE_OK || (st = moe__ck_alloc_weights(ld, &L->experts, p, E, N, K)) != MOE_OK) return st;
    {
      const moe__ck_oai_experts x = {&L->experts, {gb, gs, db, ds}};
      if ((st = moe__ck_experts(ld, E, moe__ck_oai_expert, &x)) != MOE_OK) return st;
    }
    if (!(gb = moe__ck_get(ld, 1, "%s.experts.gate_up_proj_bias", prefix)) || !(db = moe__ck_get(ld, 1, "%s.experts.down_proj_bias", prefix))) return MOE_ERR_SHAPE;
    if ((st = moe__ck_biases(ld, &L->experts, gb, NULL, db)) != MOE_OK) return st;
    moe__ck_describe(ld, MOE_CKPT_U8, &L->experts);
    return MOE_OK;
  }
  if ((st = moe__ck_hf_expert_dtype(ld, prefix, &dt)) != MOE_OK || (st = moe__ck_precision(ld, dt, precision, &p)) != MOE_OK) return st;
  L->experts.block_n = moe__ck_fp8_block_rows(c, N), L->experts.block_k = c->block_k;
  L->experts.group = c->group == -1 ? (int32_t)K : c->group;
  if (c->group == -1 && K != N) return moe__ck_fail(ld->err, MOE_ERR_UNSUPPORTED, "group_size -1 (one group per row) with hidden %lld != intermediate %lld", (long long)K, (long long)N);
  L->experts.E = E, L->experts.N = N, L->experts.K = K;
  for (int64_t e = 0; e < E; e++) { /* every tensor checked before anything is allocated */
    snprintf(module, sizeof module, "%s.experts.%lld", prefix, (long long)e);
    if ((st = moe__ck_hf_mlp(ld, &L->experts, e, module, dt, 1)) != MOE_OK) return st;
  }
  if ((st = moe__ck_alloc_weights(ld, &L->experts, p, E, N, K)) != MOE_OK) return st;
  {
    const moe__ck_hf_experts x = {&L->experts, prefix, dt};
    if ((st = moe__ck_experts(ld, E, moe__ck_hf_expert, &x)) != MOE_OK) return st;
  }
  if (c->shared_inter > 0) {
    moe_weights *s = &L->shared;
    moe__ck_hf_shared_module(ld, prefix, module, sizeof module);
    s->block_n = moe__ck_fp8_block_rows(c, c->shared_inter), s->block_k = c->block_k, s->group = L->experts.group, s->E = 1;
    s->N = c->shared_inter, s->K = K;
    if ((st = moe__ck_hf_mlp(ld, s, 0, module, dt, 1)) != MOE_OK || (st = moe__ck_alloc_weights(ld, s, p, 1, c->shared_inter, K)) != MOE_OK ||
        (st = moe__ck_hf_mlp(ld, s, 0, module, dt, 0)) != MOE_OK)
      return st;
    if (c->shared_gated && (!(t = moe__ck_get(ld, 1, "%s.shared_expert_gate.weight", prefix)) || !(L->shared_gate = moe__ck_vector(ld, t, K, 1))))
      return MOE_ERR_SHAPE;
  }
  moe__ck_describe(ld, dt, &L->experts);
  return MOE_OK;
}

/* GGUF names (llama.cpp gguf-py/gguf/constants.py TENSOR_NAMES), row-major shapes:
 *   blk.L.ffn_gate_inp.weight [E, K] (+ .bias [E], gpt-oss), blk.L.exp_probs_b.bias [E] (DeepSeek-V3)
 *   blk.L.ffn_{gate,up}_exps.weight [E, N, K], ffn_down_exps.weight [E, K, N] (+ .bias [E, N] / [E, K], gpt-oss)
 *   blk.L.ffn_{gate,up}_shexp.weight [Ns, K], ffn_down_shexp.weight [K, Ns], ffn_gate_inp_shexp.weight [K] */
static moe_status moe__ck_layer_gguf(moe__ck_load *ld, int precision) {
  const moe_ckpt_config *c = &ld->c->cfg;
  moe_ckpt_layer *L = ld->L;
  const int64_t E = c->n_experts, K = c->hidden, N = c->moe_inter, l = ld->layer;
  const char *parts[3] = {"gate", "up", "down"};
  const moe_ckpt_tensor *t, *w[3], *s[3];
  moe_precision p;
  moe_status st;
  if (!(t = moe__ck_get(ld, 1, "blk.%lld.ffn_gate_inp.weight", (long long)l)) || !(L->router_w = moe__ck_matrix_f32(ld, t, E, K))) return MOE_ERR_SHAPE;
  if (c->arch == MOE_CKPT_GPT_OSS && (!(t = moe__ck_get(ld, 1, "blk.%lld.ffn_gate_inp.bias", (long long)l)) || !(L->router_b = moe__ck_vector(ld, t, E, 0))))
    return MOE_ERR_SHAPE;
  if ((t = moe__ck_get(ld, c->arch == MOE_CKPT_DEEPSEEK_V3 && c->sigmoid, "blk.%lld.exp_probs_b.bias", (long long)l)) && !(L->correction_bias = moe__ck_vector(ld, t, E, 0)))
    return MOE_ERR_SHAPE;
  if (!t && c->arch == MOE_CKPT_DEEPSEEK_V3 && c->sigmoid) return MOE_ERR_SHAPE;
  for (int i = 0; i < 3; i++) {
    if (!(w[i] = moe__ck_get(ld, 1, "blk.%lld.ffn_%s_exps.weight", (long long)l, parts[i]))) return MOE_ERR_SHAPE;
    if (!moe__ck_check(ld, w[i], MOE__CK_T(w[0]->dtype), 3, E, i < 2 ? N : K, i < 2 ? K : N, 0)) return MOE_ERR_SHAPE;
  }
  if ((st = moe__ck_precision(ld, w[0]->dtype, precision, &p)) != MOE_OK) return st;
  L->experts.group = 32;
  if ((st = moe__ck_alloc_weights(ld, &L->experts, p, E, N, K)) != MOE_OK) return st;
  for (int64_t e = 0; e < E; e++)
    for (int i = 0; i < 3; i++) {
      moe__ck_mat m;
      memset(&m, 0, sizeof m);
      m.kind = MOE__CK_GGUF, m.w = w[i], m.rows = i < 2 ? N : K, m.cols = i < 2 ? K : N, m.expert = e;
      if ((st = moe__ck_put(ld, &L->experts, i == 2, e, i == 1 ? N : 0, &m)) != MOE_OK) return st;
    }
  if (c->arch == MOE_CKPT_GPT_OSS) {
    for (int i = 0; i < 3; i++)
      if (!(s[i] = moe__ck_get(ld, 1, "blk.%lld.ffn_%s_exps.bias", (long long)l, parts[i]))) return MOE_ERR_SHAPE;
    if ((st = moe__ck_biases(ld, &L->experts, s[0], s[1], s[2])) != MOE_OK) return st;
  }
  if (c->shared_inter > 0) {
    moe_weights *sh = &L->shared;
    const int64_t Ns = c->shared_inter;
    for (int i = 0; i < 3; i++) {
      if (!(s[i] = moe__ck_get(ld, 1, "blk.%lld.ffn_%s_shexp.weight", (long long)l, parts[i]))) return MOE_ERR_SHAPE;
      if (!moe__ck_check(ld, s[i], MOE__CK_T(w[0]->dtype), 2, i < 2 ? Ns : K, i < 2 ? K : Ns, 0, 0)) return MOE_ERR_SHAPE;
    }
    sh->group = 32;
    if ((st = moe__ck_alloc_weights(ld, sh, p, 1, Ns, K)) != MOE_OK) return st;
    for (int i = 0; i < 3; i++) {
      moe__ck_mat m;
      memset(&m, 0, sizeof m);
      m.kind = MOE__CK_GGUF, m.w = s[i], m.rows = i < 2 ? Ns : K, m.cols = i < 2 ? K : Ns;
      if ((st = moe__ck_put(ld, sh, i == 2, 0, i == 1 ? Ns : 0, &m)) != MOE_OK) return st;
    }
    if (c->shared_gated && (!(t = moe__ck_get(ld, 1, "blk.%lld.ffn_gate_inp_shexp.weight", (long long)l)) || !(L->shared_gate = moe__ck_vector(ld, t, K, 1))))
      return MOE_ERR_SHAPE;
  }
  moe__ck_describe(ld, w[0]->dtype, &L->experts);
  return MOE_OK;
}

MOE_API void moe_ckpt_layer_free(moe_ckpt_layer *l) {
  if (!l) return;
  for (size_t i = 0; i < sizeof l->owned_ / sizeof l->owned_[0]; i++) free(l->owned_[i]);
  memset(l, 0, sizeof *l);
}

static moe_status moe__ck_load_layer(const moe_ckpt *c, int64_t layer, int precision, moe_ckpt_layer *out,
                                     moe_ckpt_error *err, int no_weights, const moe_parallel *par) {
  moe__ck_load ld;
  const moe_ckpt_config *cf;
  moe_router *r;
  moe_status st;
  if (!c || !out) return moe__ck_fail(err, MOE_ERR_NULL, "NULL argument");
  memset(out, 0, sizeof *out);
  cf = &c->cfg;
  if (precision != MOE_CKPT_AUTO && (precision < 0 || precision >= MOE_PREC_COUNT)) return moe__ck_fail(err, MOE_ERR_ARG, "precision %d", precision);
  if (layer < 0 || layer >= cf->n_layers) return moe__ck_fail(err, MOE_ERR_EXPERT_ID, "layer %lld: the model has %lld layers", (long long)layer, (long long)cf->n_layers);
  if (!moe__ck_is_moe_layer(cf, layer))
    return moe__ck_fail(err, MOE_ERR_EXPERT_ID, "layer %lld is a dense layer (first MoE layer %lld, every %lld)", (long long)layer, (long long)cf->first_dense, (long long)cf->moe_every);
  ld.c = c, ld.L = out, ld.err = err, ld.layer = layer, ld.no_weights = no_weights, ld.par = par;
  st = c->gguf ? moe__ck_layer_gguf(&ld, precision) : moe__ck_layer_hf(&ld, precision);
  if (st == MOE_OK && cf->sigmoid && !out->correction_bias && !(out->correction_bias = (float *)moe__ck_own(&ld, (size_t)cf->n_experts, sizeof(float))))
    st = moe__ck_fail(err, MOE_ERR_OVERFLOW, "out of memory");
  if (st != MOE_OK) {
    moe_ckpt_layer_free(out);
    return st;
  }
  r = &out->router;
  r->E = (int32_t)cf->n_experts, r->topk = (int32_t)cf->topk, r->renormalize = cf->norm_topk_prob;
  r->routed_scaling_factor = cf->routed_scaling_factor;
  r->n_group = cf->n_group, r->topk_group = cf->topk_group;
  r->kind = cf->sigmoid ? MOE_ROUTE_BIASED_GROUPED : cf->n_group > 1 ? MOE_ROUTE_GROUPED : MOE_ROUTE_SOFTMAX;
  r->correction_bias = cf->sigmoid ? out->correction_bias : NULL;
  if (cf->arch == MOE_CKPT_GPT_OSS) out->act = MOE_ACT_SWIGLU_OAI, out->alpha = cf->swiglu_alpha, out->limit = cf->swiglu_limit;
  return MOE_OK;
}

MOE_API moe_status moe_ckpt_load_layer(const moe_ckpt *c, int64_t layer, int precision, moe_ckpt_layer *out, moe_ckpt_error *err) {
  return moe__ck_load_layer(c, layer, precision, out, err, 0, NULL);
}
MOE_API moe_status moe_ckpt_load_layer_parallel(const moe_ckpt *c, int64_t layer, int precision, moe_ckpt_layer *out,
                                                moe_ckpt_error *err, const moe_parallel *par) {
  return moe__ck_load_layer(c, layer, precision, out, err, 0, par);
}
MOE_API moe_status moe_ckpt_load_router(const moe_ckpt *c, int64_t layer, int precision, moe_ckpt_layer *out,
                                        moe_ckpt_error *err) {
  return moe__ck_load_layer(c, layer, precision, out, err, 1, NULL);
}

/* ---- loading straight into packed experts -------------------------------------------------------- */
/* Packs plain weights w (E >= 1) into a buffer L owns. */
static moe_status moe__ck_pack_into(moe_ckpt_layer *L, const moe_weights *w, moe_experts *ex, const moe_parallel *par, moe_ckpt_error *err) {
  const size_t n = moe_pack_size(w);
  void *buf = n ? moe__ck_own_in(L, n, 1) : NULL;
  moe_status st;
  if (!buf) return moe__ck_fail(err, n ? MOE_ERR_OVERFLOW : MOE_ERR_DESCRIPTOR, n ? "out of memory for %zu packed bytes" : "experts that cannot be packed", n);
  if ((st = moe_pack_parallel(w, ex, buf, n, par)) != MOE_OK) return moe__ck_fail(err, st, "moe_pack: %s", moe_status_str(st));
  return MOE_OK;
}

/* The streaming job: experts claimed one by one, each imported into its worker's scratch (one
 * expert) and packed into its place. */
typedef struct moe__ck_stream {
  moe__ck_load *ld;
  const moe_weights *whole; /* the layer's experts: shape only (moe_pack_part's whole)            */
  const char *prefix;
  moe_ckpt_dtype dt;
  void *buf;
  size_t size;
  moe_status *st;          /* [E]                                                                 */
  moe_experts *done;       /* [workers]: each worker's view of the packed experts                 */
  int64_t next;
} moe__ck_stream;
/* An expert's bf16/fp16 weights straight from the mapping, when the file holds them as the plain
 * layout wants: the precision's own dtype on a little-endian host, 2-D tensors, gate_proj directly
 * followed by up_proj (safetensors writers order a file's tensors by name: down, gate, up), so
 * [gate; up] is w13 and down_proj is w2. moe_pack_part then reads the file's pages without the
 * scratch copy (the 4-layer first load: bench_load). 0 when not; the copying path runs instead. */
static int moe__ck_hf_mapped(const moe_weights *one, const moe__ck_mat m[3], moe_weights *direct) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const moe_ckpt_dtype want = one->precision == MOE_PREC_BF16 ? MOE_CKPT_BF16 : MOE_CKPT_F16;
  if (one->precision != MOE_PREC_BF16 && one->precision != MOE_PREC_FP16) return 0;
  for (int p = 0; p < 3; p++)
    if (m[p].kind != MOE__CK_FLOAT || m[p].w->dtype != want || m[p].expert != 0 || m[p].w->bytes != (size_t)(one->N * one->K) * 2)
      return 0;
  if (m[0].w->data + m[0].w->bytes != m[1].w->data) return 0;
  *direct = *one;
  direct->w13 = m[0].w->data, direct->w2 = m[2].w->data;
  return 1;
#else
  (void)one, (void)m, (void)direct;
  return 0;
#endif
}
/* Expert e packed into place: from the mapping (above), else through scratch `one` (whose arrays lw owns). */
static moe_status moe__ck_stream_one(const moe__ck_stream *J, moe__ck_load *lw, moe_weights *one, int64_t e, moe_experts *ex) {
  char module[256];
  moe__ck_mat m[3];
  moe_weights direct;
  moe_status st;
  snprintf(module, sizeof module, "%s.experts.%lld", J->prefix, (long long)e);
  if ((st = moe__ck_hf_mats(lw, one, module, J->dt, m)) != MOE_OK) return st;
  if (moe__ck_hf_mapped(one, m, &direct)) one = &direct;
  else if ((st = moe__ck_hf_put(lw, one, 0, m)) != MOE_OK) return st;
  if ((st = moe_pack_part(J->whole, one, e, ex, J->buf, J->size)) != MOE_OK) return moe__ck_fail(lw->err, st, "moe_pack_part: %s", moe_status_str(st));
  return MOE_OK;
}
/* A worker's scratch: one expert's plain arrays, owned by *scratch. */
static moe_status moe__ck_stream_scratch(const moe__ck_stream *J, moe_ckpt_layer *scratch, moe_ckpt_error *err, moe__ck_load *lw,
                                         moe_weights *one) {
  memset(scratch, 0, sizeof *scratch);
  *lw = *J->ld, lw->L = scratch, lw->err = err, lw->no_weights = 0;
  *one = *J->whole;
  one->E = 1;
  return moe__ck_alloc_weights(lw, one, one->precision, 1, one->N, one->K);
}
static void moe__ck_stream_worker(void *arg, int64_t t) {
  moe__ck_stream *J = (moe__ck_stream *)arg;
  moe_ckpt_layer scratch;
  moe_ckpt_error err;
  moe__ck_load lw;
  moe_weights one;
  int64_t e;
  moe_status st = moe__ck_stream_scratch(J, &scratch, &err, &lw, &one);
  while ((e = __atomic_fetch_add(&J->next, 1, __ATOMIC_RELAXED)) < J->whole->E)
    J->st[e] = st != MOE_OK ? st : moe__ck_stream_one(J, &lw, &one, e, &J->done[t]);
  moe_ckpt_layer_free(&scratch);
}
/* The workers a pool gives: its n_threads, OpenMP's, or a few for a pool of unknown size. */
static int64_t moe__ck_workers(const moe_parallel *par) {
  if (!par) return 1;
  if (par->n_threads > 0) return par->n_threads;
#ifdef _OPENMP
  if (!par->parallel_for) return omp_get_max_threads();
#endif
  return par->parallel_for ? 8 : 1;
}
/* The pages of a fresh buffer mapped in before the workers write it: madvise(MADV_POPULATE_WRITE,
 * Linux 5.14) over one part per worker. A first load packs into memory nothing has touched, and a
 * fault per 4 KB page cost it more than the copying (2.4 GB on 2 threads: 460-630 ms of faults,
 * 310 ms populated; docs/checkpoints.md). Through posix_madvise, which glibc and musl pass on to
 * madvise for advice they do not handle themselves (and which _POSIX_C_SOURCE declares); where the
 * kernel refuses (older, or not Linux) the writes fault as before. */
typedef struct moe__ck_populate {
  uint8_t *p;
  size_t n;
  int64_t parts;
} moe__ck_populate;
static void moe__ck_populate_part(void *arg, int64_t t) {
#if defined(__linux__)
  const moe__ck_populate *P = (const moe__ck_populate *)arg;
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), base = (uintptr_t)P->p, step = P->n / (size_t)P->parts;
  uintptr_t a = base + step * (size_t)t, b = t + 1 == P->parts ? base + P->n : a + step;
  a = (a + page - 1) & ~(page - 1), b &= ~(page - 1);
  if (b > a) (void)posix_madvise((void *)a, b - a, 23 /* MADV_POPULATE_WRITE */);
#else
  (void)arg, (void)t;
#endif
}

/* The routed experts of an HF layer (not gpt-oss) streamed into packed experts L owns. */
static moe_status moe__ck_stream_experts(moe__ck_load *ld, moe_experts *ex) {
  moe_ckpt_layer *L = ld->L;
  moe_weights whole = L->experts;
  char prefix[128];
  moe__ck_stream J;
  const int64_t nw = moe__ck_workers(ld->par) < whole.E ? moe__ck_workers(ld->par) : whole.E;
  moe_status st;
  static const uint8_t any[1] = {0}; /* whole's arrays are never read: moe_pack_part checks them only */
  memset(&J, 0, sizeof J);
  moe__ck_hf_prefix(ld, prefix, sizeof prefix);
  if ((st = moe__ck_hf_expert_dtype(ld, prefix, &J.dt)) != MOE_OK) return st;
  whole.w13 = whole.w2 = any, whole.w13_scale = whole.w2_scale = (const float *)(const void *)any;
  whole.w13_zero = whole.w2_zero = whole.w13_e8m0 = whole.w2_e8m0 = any;
  whole.b13 = whole.b2 = NULL; /* HF experts other than gpt-oss have no biases */
  J.size = moe_pack_size(&whole);
  if (!J.size || !(J.buf = moe__ck_own_in(L, J.size, 1))) return moe__ck_fail(ld->err, J.size ? MOE_ERR_OVERFLOW : MOE_ERR_DESCRIPTOR, "packed experts: %zu bytes", J.size);
  J.st = (moe_status *)calloc((size_t)whole.E, sizeof *J.st), J.done = (moe_experts *)calloc((size_t)nw, sizeof *J.done);
  if (!J.st || !J.done) {
    free(J.st), free(J.done);
    return moe__ck_fail(ld->err, MOE_ERR_OVERFLOW, "out of memory");
  }
  J.ld = ld, J.whole = &whole, J.prefix = prefix;
  {
    moe__ck_populate P;
    P.p = (uint8_t *)J.buf, P.n = J.size, P.parts = nw;
    if (nw < 2) moe__ck_populate_part(&P, 0);
    else moe__ck_parallel(ld->par, moe__ck_populate_part, &P, nw);
  }
  if (nw < 2) moe__ck_stream_worker(&J, 0);
  else moe__ck_parallel(ld->par, moe__ck_stream_worker, &J, nw);
  for (int64_t e = 0; e < whole.E && st == MOE_OK; e++)
    if (J.st[e] != MOE_OK) { /* the lowest failing expert again, alone, for its message */
      moe_ckpt_layer scratch;
      moe__ck_load lw;
      moe_weights one;
      moe_experts tmp;
      st = moe__ck_stream_scratch(&J, &scratch, ld->err, &lw, &one);
      st = st != MOE_OK ? st : moe__ck_stream_one(&J, &lw, &one, e, &tmp);
      if (st == MOE_OK) st = moe__ck_fail(ld->err, J.st[e], "expert %lld failed on a worker and not alone", (long long)e);
      moe_ckpt_layer_free(&scratch);
    }
  for (int64_t t = 0; t < nw && st == MOE_OK; t++)
    if (J.done[t].magic) {
      *ex = J.done[t];
      break;
    }
  free(J.st), free(J.done);
  return st;
}

MOE_API moe_status moe_ckpt_load_layer_packed(const moe_ckpt *c, int64_t layer, int precision, moe_ckpt_layer *out,
                                              moe_experts *experts, moe_experts *shared, moe_ckpt_error *err,
                                              const moe_parallel *par) {
  moe_ckpt_layer T;
  moe_status st;
  if (!experts || !shared) return moe__ck_fail(err, MOE_ERR_NULL, "NULL argument");
  memset(experts, 0, sizeof *experts), memset(shared, 0, sizeof *shared);
  if ((st = moe__ck_load_layer(c, layer, precision, out, err, 1, NULL)) != MOE_OK) return st; /* router, descriptors, checks */
  if (!c->gguf && c->cfg.arch != MOE_CKPT_GPT_OSS) {
    moe__ck_load ld;
    memset(&ld, 0, sizeof ld);
    ld.c = c, ld.L = out, ld.err = err, ld.layer = layer, ld.par = par;
    st = moe__ck_stream_experts(&ld, experts);
    if (st == MOE_OK && out->shared.E) { /* the shared expert: small, whole */
      char prefix[128], module[256];
      moe_ckpt_layer scratch;
      moe__ck_load lw = ld;
      moe_weights one = out->shared;
      moe_ckpt_dtype dt;
      memset(&scratch, 0, sizeof scratch);
      lw.L = &scratch;
      moe__ck_hf_prefix(&ld, prefix, sizeof prefix);
      moe__ck_hf_shared_module(&ld, prefix, module, sizeof module);
      if ((st = moe__ck_hf_expert_dtype(&ld, prefix, &dt)) == MOE_OK &&
          (st = moe__ck_alloc_weights(&lw, &one, one.precision, 1, one.N, one.K)) == MOE_OK &&
          (st = moe__ck_hf_mlp(&lw, &one, 0, module, dt, 0)) == MOE_OK)
        st = moe__ck_pack_into(out, &one, shared, par, err);
      moe_ckpt_layer_free(&scratch);
    }
  } else { /* the plain layer on par's threads, packed, freed */
    if ((st = moe__ck_load_layer(c, layer, precision, &T, err, 0, par)) != MOE_OK) {
      moe_ckpt_layer_free(out);
      return st;
    }
    st = moe__ck_pack_into(out, &T.experts, experts, par, err);
    if (st == MOE_OK && T.shared.E) st = moe__ck_pack_into(out, &T.shared, shared, par, err);
    moe_ckpt_layer_free(&T);
  }
  if (st != MOE_OK) {
    moe_ckpt_layer_free(out);
    memset(experts, 0, sizeof *experts), memset(shared, 0, sizeof *shared);
  }
  return st;
}

MOE_API void moe_ckpt_router_logits(const moe_ckpt_layer *l, const float *x, int64_t M, float *logits) {
  const int64_t E = l->router.E, K = l->experts.K;
  for (int64_t m = 0; m < M; m++)
    for (int64_t e = 0; e < E; e++) {
      double s = l->router_b ? l->router_b[e] : 0.0;
      for (int64_t k = 0; k < K; k++) s += (double)x[m * K + k] * l->router_w[e * K + k];
      logits[m * E + e] = (float)s;
    }
}

#endif /* MOE_CHECKPOINT_IMPLEMENTATION_DONE */
#endif /* MOE_CHECKPOINT_IMPLEMENTATION */
