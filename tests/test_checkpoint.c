/* Checkpoint reader tests (moe_checkpoint.h). For each architecture and file format a tiny model
 * (E 4..8 experts, K 64..160, N 32..128, 2-3 layers) is generated from random plain values (never
 * zeros), written by tests/ckpt_writer.h the way the producing tool writes it (safetensors as
 * transformers + the safetensors library, shards with model.safetensors.index.json, config.json,
 * AutoAWQ / AutoGPTQ (v1) / GPTQModel (gptq_v2) packing, DeepSeek fp8 128x128 blocks, gpt-oss mxfp4
 * blocks; GGUF v3 and v2 as llama.cpp's converter and llama-quantize) into a temporary directory,
 * opened with moe_ckpt_open, and every MoE layer is loaded (moe_ckpt_load_layer, MOE_CKPT_AUTO),
 * packed (moe_pack), routed from moe_ckpt_router_logits and run (moe_forward, f32 x and out).
 * Checks per layer:
 *   - the config (arch, sizes, routing flags, quantization) and the layer's descriptors;
 *   - the loaded plain weights, dequantized by oracle.h's decoders, equal the test's own values row
 *     for row (for Q8_0, requantized to int8 per channel, within the int8 step of each row), and the
 *     router weight, router bias, correction bias, shared gate and expert biases equal them exactly;
 *   - the router logits equal the test's float64 logits, and moe_route with the layer's router picks
 *     the experts (and weights) of the test's own routing, written after each model's reference
 *     (transformers): Mixtral softmax -> top-k -> renormalize; Qwen2/3-MoE softmax -> top-k ->
 *     renormalize iff norm_topk_prob; DeepSeek-V3 sigmoid + e_score_correction_bias, group score =
 *     sum of the top-2 biased scores of a group, topk_group groups kept (the others masked to 0.0),
 *     top-k by biased score, weights the unbiased scores, normalized if norm_topk_prob, times
 *     routed_scaling_factor; gpt-oss logits + bias, top-k on the logits, softmax over the k. Tokens
 *     whose k-th and (k+1)-th selection scores (or kept groups) are within 1e-3 are drawn again;
 *   - the output against oracle.h's float64 oracle run on the test's own plain weights with the
 *     test's own routing, at test_layer.c's tolerance for f32 output (5e-4); Q8_0 (requantized)
 *     against a float64 reference on the Q8_0 values, with a looser tolerance.
 * Then bad input: a layer past the last, a leading dense layer (DeepSeek first_k_dense_replace), a
 * missing tensor (named in err.msg), GPTQ act-order (permuted g_idx: MOE_ERR_UNSUPPORTED), and every
 * truncation of a safetensors and of a GGUF file (the parsers on exact-size copies, and
 * moe_ckpt_open / moe_ckpt_load_layer on truncated files): a status, never a crash.
 */
#include "ckpt_writer.h" /* first: it asks for POSIX (mkdtemp) */
#define MOE_CHECKPOINT_IMPLEMENTATION /* moe.h itself: libmoe (tests/meson.build) */
#include "../moe_checkpoint.h"
#include "test_util.h"
#include <pthread.h>
#include "oracle.h"
#include "../examples/npy.h"

#define M_TOK 32        /* tokens per layer                                                       */
#define VOCAB 32        /* embedding rows of the non-MoE tensors written for realism              */
#define GAP_MIN 1e-3    /* smallest accepted gap between the k-th and (k+1)-th selection scores   */
#define TOL_F32 5e-4    /* test_layer.c: every precision, f32 output                              */
#define TOL_Q8 3e-2     /* Q8_0 requantized per channel: compared with the Q8_0 values themselves */

enum { F_BF16, F_F16, F_FP8, F_AWQ, F_GPTQ, F_MXFP4, F_Q4_0, F_Q8_0 };
enum { RD_BF16, RD_F16, RD_F32 }; /* dtype of the non-expert floats (router, biases, gates) in the file */

/* Q8_0 weights: codes, f16 block scales and their values, in the plain row order [E][rows][cols]. */
/* With a path to examples/moe_checkpoint (argv[1]), every AUTO layer also runs through the tool:
 * x written as .npy, the tool run on the checkpoint, its .npy output held to the same oracle, and
 * run again from the packed file the first run saved (the same bits). */
static const char *g_tool;
static char g_ckpt[768], g_dir[768];

/* The tool's output also through a packed file: --save-packed on the first run, --packed on a
 * second, whose output must be bitwise the first's (INFINITY when it is not). */
static double tool_run(int l, const float *x, int64_t M, int64_t K, const double *ref) {
  char xp[900], op[900], op2[900], pp[900], cmd[4000], msg[256];
  npy_f32 o, o2;
  double e = INFINITY;
  snprintf(xp, sizeof xp, "%s/x.npy", g_dir), snprintf(op, sizeof op, "%s/out.npy", g_dir);
  snprintf(op2, sizeof op2, "%s/out2.npy", g_dir), snprintf(pp, sizeof pp, "%s/layer.moepack", g_dir);
  if (npy_write_f32(xp, x, M, K, msg, sizeof msg) != 0) return e;
  snprintf(cmd, sizeof cmd, "'%s' '%s' --layer %d --x '%s' --out '%s' --save-packed '%s' > /dev/null", g_tool, g_ckpt, l,
           xp, op, pp);
  if (system(cmd) != 0 || npy_read_f32(op, &o, msg, sizeof msg) != 0) return e;
  snprintf(cmd, sizeof cmd, "'%s' '%s' --layer %d --x '%s' --out '%s' --packed '%s' > /dev/null", g_tool, g_ckpt, l, xp,
           op2, pp);
  if (system(cmd) == 0 && npy_read_f32(op2, &o2, msg, sizeof msg) == 0) {
    if (o.rows == M && o.cols == K && o2.rows == M && o2.cols == K && !memcmp(o.data, o2.data, (size_t)(M * K) * 4))
      e = orc_rel_err(MOE_F32, o.data, K, ref, M, K, NULL);
    npy_free(&o2);
  }
  npy_free(&o);
  remove(xp), remove(op), remove(op2), remove(pp);
  return e;
}

/* The tool over every MoE layer: packing them all into a packed file, then mapping them from it. */
static int tool_all_layers(void) {
  char pp[900], cmd[6000];
  int rc;
  snprintf(pp, sizeof pp, "%s/all.moepack", g_dir);
  snprintf(cmd, sizeof cmd,
           "'%s' '%s' --all-layers --save-packed '%s' | grep -E '^  (read|total|first)' && "
           "'%s' '%s' --all-layers --packed '%s' | grep -E '^  (read|total|first)'",
           g_tool, g_ckpt, pp, g_tool, g_ckpt, pp);
  rc = system(cmd);
  remove(pp);
  return rc;
}

typedef struct q8w {
  int64_t E, N, K;
  int8_t *q[2];
  uint16_t *d[2]; /* [E][rows][cols/32] */
  double *v[2];
} q8w;

typedef struct lay {
  int moe;
  orc_plain ex, sh; /* routed experts, shared expert (sh.w.E == 0: none); not for Q8_0 */
  q8w qx, qs;       /* Q8_0 routed and shared experts                                  */
  double *rw;       /* router [E][K], the values the file holds                          */
  double *rb;       /* router bias [E] (gpt-oss) or NULL                                 */
  double *corr;     /* e_score_correction_bias [E] (DeepSeek) or NULL                    */
  double *sgate;    /* shared_expert_gate [K] (Qwen2-MoE) or NULL                        */
  float *sgate_f;
} lay;

typedef struct model {
  const char *name;
  moe_ckpt_arch arch;
  int fmt, gguf, rd;
  int64_t E, N, K, Nsh, n_layers, first_dense, Ndense;
  int32_t topk, n_group, topk_group, group;
  int norm, bias, gptq_v2;
  double rsf;
  uint64_t seed;
  lay L[4];
} model;

static moe_precision plain_prec(int fmt) {
  switch (fmt) {
  case F_BF16: return MOE_PREC_BF16;
  case F_F16: return MOE_PREC_FP16;
  case F_FP8: return MOE_PREC_FP8;
  case F_MXFP4: return MOE_PREC_MXFP4;
  case F_Q8_0: return MOE_PREC_INT8;
  default: return MOE_PREC_INT4_W4A16;
  }
}
static int is_int4(int fmt) { return fmt == F_AWQ || fmt == F_GPTQ || fmt == F_Q4_0; }
static double round_rd(int rd, double v) {
  if (rd == RD_BF16) return orc_bf16(orc_to_bf16_bits(v));
  if (rd == RD_F16) return orc_f16(orc_to_f16_bits(v));
  return (double)(float)v;
}
static double *dalloc(int64_t n) { return (double *)test_malloc(sizeof(double) * (size_t)(n > 0 ? n : 1)); }
static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ==== the test's own weights ========================================================================= */
static void q8_make(q8w *w, int64_t E, int64_t N, int64_t K, kit_rng *r) {
  memset(w, 0, sizeof *w);
  w->E = E, w->N = N, w->K = K;
  for (int mat = 0; mat < 2; mat++) {
    int64_t rows = mat ? K : 2 * N, cols = mat ? N : K, n = E * rows * cols;
    double inv = 1.0 / sqrt((double)cols);
    w->q[mat] = (int8_t *)test_malloc((size_t)n);
    w->d[mat] = (uint16_t *)test_malloc(sizeof(uint16_t) * (size_t)(n / 32));
    w->v[mat] = dalloc(n);
    for (int64_t i = 0; i < n; i++) {
      int v = (int)kit_randint(r, 255) - 127; /* llama.cpp's quantizer writes -127..127 */
      w->q[mat][i] = (int8_t)(v == 0 ? 1 : v);
    }
    /* block scales that differ along a row (so per-channel requantization loses something) */
    for (int64_t b = 0; b < n / 32; b++) w->d[mat][b] = orc_to_f16_bits(inv / 73.6 * (0.3 + 1.4 * kit_uniform(r)));
    for (int64_t i = 0; i < n; i++) w->v[mat][i] = (double)w->q[mat][i] * orc_f16(w->d[mat][i / 32]);
  }
}
static void q8_free(q8w *w) {
  for (int mat = 0; mat < 2; mat++) free(w->q[mat]), free(w->d[mat]), free(w->v[mat]);
  memset(w, 0, sizeof *w);
}

/* The plain scale block rows of an fp8 layer of intermediate size N (what the loader makes of 128-row
 * checkpoint blocks): 128, or gcd(128, N) when gate and up each own a partial last block. */
static int64_t fp8_block_rows(int64_t N) {
  int64_t a = 128, b = N;
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return N % 128 ? a : 128;
}

/* orc_plain_make's values, then what the file formats require of them */
static void plain_fixup(orc_plain *p, const model *m, kit_rng *r) {
  const moe_weights *w = &p->w;
  for (int mat = 0; mat < 2; mat++) {
    int64_t rows = mat ? w->K : 2 * w->N, cols = mat ? w->N : w->K;
    if (is_int4(m->fmt)) {
      int64_t n = w->E * rows * cdiv(cols, m->group);
      for (int64_t i = 0; i < n; i++) {
        p->s[mat][i] = (float)orc_f16(orc_to_f16_bits(p->s[mat][i])); /* f16 scales in every int4 format */
        if (m->fmt == F_Q4_0) p->z[mat][i] = 8;                       /* (q - 8) * d                    */
        if (m->fmt == F_GPTQ && !m->gptq_v2) p->z[mat][i] = (uint8_t)(1 + kit_randint(r, 15)); /* AutoGPTQ: 1..15 */
      }
    }
    if (m->fmt == F_FP8) { /* weight_scale_inv: positive f32; plain blocks of one 128-row checkpoint block share it */
      const int64_t bn = w->block_n, PRB = cdiv(rows, bn), CB = cdiv(cols, 128);
      for (int64_t i = 0; i < w->E * PRB * CB; i++) p->s[mat][i] = fabsf(p->s[mat][i]);
      for (int64_t e = 0; e < w->E; e++)
        for (int64_t b = 0; b < PRB; b++) {
          const int64_t r = b * bn, half = !mat && r >= w->N ? w->N : 0; /* W13: gate and up are two matrices */
          const int64_t b0 = (half + (r - half) / 128 * 128) / bn;     /* the first plain block of its checkpoint block */
          for (int64_t c = 0; c < CB; c++) p->s[mat][(e * PRB + b) * CB + c] = p->s[mat][(e * PRB + b0) * CB + c];
        }
    }
  }
  if (p->b13) { /* gpt-oss biases are bf16 in the checkpoint */
    for (int64_t i = 0; i < w->E * 2 * w->N; i++) p->b13[i] = (float)orc_bf16(orc_to_bf16_bits(p->b13[i]));
    for (int64_t i = 0; i < w->E * w->K; i++) p->b2[i] = (float)orc_bf16(orc_to_bf16_bits(p->b2[i]));
  }
}

static void gen_model(model *m) {
  for (int l = 0; l < m->n_layers; l++) {
    lay *L = &m->L[l];
    kit_rng r = kit_rng_stream(m->seed, 100 + (uint64_t)l);
    memset(L, 0, sizeof *L);
    L->moe = l >= m->first_dense;
    if (!L->moe) continue;
    if (m->fmt == F_Q8_0) {
      q8_make(&L->qx, m->E, m->N, m->K, &r);
      if (m->Nsh) q8_make(&L->qs, 1, m->Nsh, m->K, &r);
    } else {
      orc_spec s;
      memset(&s, 0, sizeof s);
      s.prec = plain_prec(m->fmt), s.E = m->E, s.N = m->N, s.K = m->K, s.bias = m->bias;
      s.block_n = m->fmt == F_FP8 ? fp8_block_rows(m->N) : 0, s.block_k = m->fmt == F_FP8 ? 128 : 0;
      s.group = is_int4(m->fmt) ? m->group : 0;
      s.seed = m->seed * 1000 + (uint64_t)l;
      orc_plain_make(&L->ex, &s);
      plain_fixup(&L->ex, m, &r);
      if (m->Nsh) {
        s.E = 1, s.N = m->Nsh, s.bias = 0, s.seed += 500;
        if (m->fmt == F_FP8) s.block_n = fp8_block_rows(m->Nsh);
        orc_plain_make(&L->sh, &s);
        plain_fixup(&L->sh, m, &r);
      }
    }
    L->rw = dalloc(m->E * m->K);
    for (int64_t i = 0; i < m->E * m->K; i++) L->rw[i] = round_rd(m->rd, kit_normal(&r) / sqrt((double)m->K));
    if (m->arch == MOE_CKPT_GPT_OSS) {
      L->rb = dalloc(m->E);
      for (int64_t e = 0; e < m->E; e++) L->rb[e] = round_rd(m->rd, 0.5 * kit_normal(&r));
    }
    if (m->arch == MOE_CKPT_DEEPSEEK_V3) { /* f32 in DeepSeek-V3's checkpoint */
      L->corr = dalloc(m->E);
      for (int64_t e = 0; e < m->E; e++) L->corr[e] = (double)(float)(0.05 * kit_normal(&r));
    }
    if (m->arch == MOE_CKPT_QWEN2_MOE) {
      L->sgate = dalloc(m->K);
      L->sgate_f = (float *)test_malloc(sizeof(float) * (size_t)m->K);
      for (int64_t k = 0; k < m->K; k++) {
        L->sgate[k] = round_rd(m->gguf ? RD_BF16 : m->rd, kit_normal(&r) / sqrt((double)m->K));
        L->sgate_f[k] = (float)L->sgate[k];
      }
    }
  }
}

static void free_model(model *m) {
  for (int l = 0; l < m->n_layers; l++) {
    lay *L = &m->L[l];
    if (L->ex.w.E) orc_plain_free(&L->ex);
    if (L->sh.w.E) orc_plain_free(&L->sh);
    q8_free(&L->qx), q8_free(&L->qs);
    free(L->rw), free(L->rb), free(L->corr), free(L->sgate), free(L->sgate_f);
    memset(L, 0, sizeof *L);
  }
}

/* ==== writing: Hugging Face safetensors ============================================================== */
static cw_st_dtype st_rd(int rd) { return rd == RD_BF16 ? CW_ST_BF16 : rd == RD_F16 ? CW_ST_F16 : CW_ST_F32; }
/* n values of the model's float dtype */
static void *enc_rd(int rd, const double *v, int64_t n) {
  if (rd == RD_F32) {
    float *f = (float *)test_malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
    return f;
  } else {
    uint16_t *h = (uint16_t *)test_malloc(sizeof(uint16_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) h[i] = rd == RD_BF16 ? orc_to_bf16_bits(v[i]) : orc_to_f16_bits(v[i]);
    return h;
  }
}
static void st_values(cw_st *s, int shard, const char *name, int rd, int n_dims, const int64_t *shape, const double *v) {
  int64_t n = 1;
  for (int i = 0; i < n_dims; i++) n *= shape[i];
  void *p = enc_rd(rd, v, n);
  cw_st_add(s, shard, name, st_rd(rd), n_dims, shape, p);
  free(p);
}
/* a non-MoE tensor of n random values (norm: around 1) */
static void st_filler(cw_st *s, int shard, const char *name, int rd, int64_t a, int64_t b, int norm, kit_rng *r) {
  int64_t shape[2] = {a, b}, n = a * (b ? b : 1);
  double *v = dalloc(n);
  for (int64_t i = 0; i < n; i++) v[i] = round_rd(rd, norm ? 1.0 + 0.1 * kit_normal(r) : 0.1 * kit_normal(r));
  st_values(s, shard, name, rd, b ? 2 : 1, shape, v);
  free(v);
}

/* expert matrix mat (0 gate, 1 up, 2 down) of expert e of plain p: rows x cols from plain row row0 */
typedef struct mat_ref {
  int64_t rows, cols, row0, prow; /* prow: rows of the plain matrix (2N or K) */
  int pm;                         /* plain matrix: 0 W13, 1 W2 */
} mat_ref;
static mat_ref mat_of(const moe_weights *w, int mat) {
  mat_ref r;
  r.pm = mat == 2;
  r.rows = mat < 2 ? w->N : w->K;
  r.cols = mat < 2 ? w->K : w->N;
  r.row0 = mat == 1 ? w->N : 0;
  r.prow = mat < 2 ? 2 * w->N : w->K;
  return r;
}
static int nib(const uint8_t *row, int64_t c) { return (c & 1) ? row[c / 2] >> 4 : row[c / 2] & 15; }

/* One linear layer "<base>.weight" (+ its quantization tensors) of expert e of p, as the tool writes it. */
static void st_linear(cw_st *s, int shard, const model *m, const char *base, const orc_plain *p, int64_t e, int mat,
                      int act_order) {
  const moe_weights *w = &p->w;
  mat_ref R = mat_of(w, mat);
  char name[300];
  const int64_t rows = R.rows, cols = R.cols, first = e * R.prow + R.row0; /* first plain row */
  if (m->fmt == F_BF16 || m->fmt == F_F16) {
    snprintf(name, sizeof name, "%s.weight", base);
    cw_st_add2(s, shard, name, m->fmt == F_BF16 ? CW_ST_BF16 : CW_ST_F16, rows, cols,
               (const uint16_t *)p->q[R.pm] + first * cols);
  } else if (m->fmt == F_FP8) { /* DeepSeek-V3: e4m3 weight, f32 weight_scale_inv [ceil(rows/128), ceil(cols/128)] */
    const int64_t bn = w->block_n, CB = cdiv(cols, 128), RB = cdiv(rows, 128), PRB = cdiv(R.prow, bn);
    float *si = (float *)test_malloc(sizeof(float) * (size_t)(RB * CB));
    if (R.row0 % bn || 128 % bn) {
      fprintf(stderr, "fp8 test data: a gate/up of %lld rows does not start on a %lld-row block\n", (long long)rows, (long long)bn);
      exit(2);
    }
    for (int64_t b = 0; b < RB; b++) /* checkpoint block b: the plain's block holding its first row */
      for (int64_t c = 0; c < CB; c++) si[b * CB + c] = p->s[R.pm][(e * PRB + (R.row0 + b * 128) / bn) * CB + c];
    snprintf(name, sizeof name, "%s.weight", base);
    cw_st_add2(s, shard, name, CW_ST_F8_E4M3, rows, cols, (const uint8_t *)p->q[R.pm] + first * cols);
    snprintf(name, sizeof name, "%s.weight_scale_inv", base);
    cw_st_add2(s, shard, name, CW_ST_F32, RB, CB, si);
    free(si);
  } else { /* AWQ / GPTQ: codes [out][in], zero points and f16 scale bits [out][ng] */
    const int64_t g = m->group, ng = cdiv(cols, g), rb = cdiv(cols, 2);
    uint8_t *q = (uint8_t *)test_malloc((size_t)(rows * cols)), *z = (uint8_t *)test_malloc((size_t)(rows * ng));
    uint16_t *sc = (uint16_t *)test_malloc(sizeof(uint16_t) * (size_t)(rows * ng));
    uint32_t *qw = (uint32_t *)test_malloc(sizeof(uint32_t) * (size_t)(rows * cols / 8));
    uint32_t *qz = (uint32_t *)test_malloc(sizeof(uint32_t) * (size_t)(ng * rows / 8));
    uint16_t *scales = (uint16_t *)test_malloc(sizeof(uint16_t) * (size_t)(ng * rows));
    for (int64_t o = 0; o < rows; o++) {
      const uint8_t *row = (const uint8_t *)p->q[R.pm] + (first + o) * rb;
      for (int64_t c = 0; c < cols; c++) q[o * cols + c] = (uint8_t)nib(row, c);
      for (int64_t j = 0; j < ng; j++) {
        z[o * ng + j] = p->z[R.pm][(first + o) * ng + j];
        sc[o * ng + j] = orc_to_f16_bits(p->s[R.pm][(first + o) * ng + j]);
      }
    }
    /* (uint32 words stored as the I32 bytes of a little-endian host, as torch.int32 tensors) */
    if (m->fmt == F_AWQ) {
      cw_awq_pack(rows, cols, g, q, z, sc, qw, qz, scales);
      snprintf(name, sizeof name, "%s.qweight", base);
      cw_st_add2(s, shard, name, CW_ST_I32, cols, rows / 8, qw);
      snprintf(name, sizeof name, "%s.qzeros", base);
      cw_st_add2(s, shard, name, CW_ST_I32, ng, rows / 8, qz);
      snprintf(name, sizeof name, "%s.scales", base);
      cw_st_add2(s, shard, name, CW_ST_F16, ng, rows, scales);
    } else {
      int32_t *gi = (int32_t *)test_malloc(sizeof(int32_t) * (size_t)cols);
      cw_gptq_pack(rows, cols, g, q, z, sc, qw, qz, scales, m->gptq_v2);
      for (int64_t i = 0; i < cols; i++) gi[i] = (int32_t)(i / g);
      if (act_order) { /* AutoGPTQ with desc_act: g_idx = (i // group)[invperm], a permutation of it */
        kit_rng r = kit_rng_stream(m->seed, 7777);
        for (int64_t i = cols - 1; i > 0; i--) {
          int64_t j = kit_randint(&r, i + 1);
          int32_t t = gi[i];
          gi[i] = gi[j], gi[j] = t;
        }
      }
      snprintf(name, sizeof name, "%s.qweight", base);
      cw_st_add2(s, shard, name, CW_ST_I32, cols / 8, rows, qw);
      snprintf(name, sizeof name, "%s.qzeros", base);
      cw_st_add2(s, shard, name, CW_ST_I32, ng, rows / 8, qz);
      snprintf(name, sizeof name, "%s.scales", base);
      cw_st_add2(s, shard, name, CW_ST_F16, ng, rows, scales);
      snprintf(name, sizeof name, "%s.g_idx", base);
      cw_st_add1(s, shard, name, CW_ST_I32, cols, gi);
      free(gi);
    }
    free(q), free(z), free(sc), free(qw), free(qz), free(scales);
  }
}

/* gpt-oss experts (transformers' GptOssExperts checkpoint): gate_up_proj_blocks [E, 2N, K/32, 16],
 * gate_up_proj_scales [E, 2N, K/32], rows interleaved (gate i = 2i, up i = 2i + 1), gate_up_proj_bias
 * [E, 2N] bf16 interleaved; down_proj_blocks [E, K, N/32, 16], down_proj_scales, down_proj_bias [E, K]. */
static void st_oss_experts(cw_st *s, int shard, const model *m, int l, const orc_plain *p) {
  const int64_t E = m->E, N = m->N, K = m->K;
  char name[256];
  for (int mat = 0; mat < 2; mat++) {
    const int64_t rows = mat ? K : 2 * N, cols = mat ? N : K, nb = cols / 32;
    uint8_t *blocks = (uint8_t *)test_malloc((size_t)(E * rows * cols / 2)), *scales = (uint8_t *)test_malloc((size_t)(E * rows * nb));
    double *bias = dalloc(E * rows);
    for (int64_t e = 0; e < E; e++)
      for (int64_t t = 0; t < rows; t++) { /* checkpoint row t */
        int64_t pr = mat ? t : (t % 2 ? N : 0) + t / 2;
        memcpy(blocks + (e * rows + t) * cols / 2, (const uint8_t *)p->q[mat] + (e * rows + pr) * cols / 2, (size_t)(cols / 2));
        memcpy(scales + (e * rows + t) * nb, p->x8[mat] + (e * rows + pr) * nb, (size_t)nb);
        bias[e * rows + t] = mat ? p->b2[e * K + pr] : p->b13[e * 2 * N + pr];
      }
    snprintf(name, sizeof name, "model.layers.%d.mlp.experts.%s_blocks", l, mat ? "down_proj" : "gate_up_proj");
    cw_st_add4(s, shard, name, CW_ST_U8, E, rows, nb, 16, blocks);
    snprintf(name, sizeof name, "model.layers.%d.mlp.experts.%s_scales", l, mat ? "down_proj" : "gate_up_proj");
    cw_st_add3(s, shard, name, CW_ST_U8, E, rows, nb, scales);
    snprintf(name, sizeof name, "model.layers.%d.mlp.experts.%s_bias", l, mat ? "down_proj" : "gate_up_proj");
    {
      int64_t sh[2] = {E, rows};
      st_values(s, shard, name, RD_BF16, 2, sh, bias);
    }
    free(blocks), free(scales), free(bias);
  }
}

/* The model's tensors in state-dict order; shard 2 starts at expert split_e of layer split_l (0: one file). */
static void build_hf(const model *m, cw_st *s, int split_l, int split_e, int act_order) {
  const int64_t E = m->E, K = m->K;
  kit_rng r = kit_rng_stream(m->seed, 9);
  const int mix = m->arch == MOE_CKPT_MIXTRAL, oss = m->arch == MOE_CKPT_GPT_OSS;
  int shard = 1;
  char name[256], base[256];
  static const char *const mixtral_w[3] = {"w1", "w3", "w2"}, *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
  st_filler(s, shard, "model.embed_tokens.weight", m->rd, VOCAB, K, 0, &r);
  for (int l = 0; l < m->n_layers; l++) {
    const lay *L = &m->L[l];
    if (split_l && l == split_l && split_e == 0) shard = 2;
    snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", l);
    st_filler(s, shard, name, m->rd, K, 0, 1, &r);
    snprintf(name, sizeof name, "model.layers.%d.post_attention_layernorm.weight", l);
    st_filler(s, shard, name, m->rd, K, 0, 1, &r);
    if (!L->moe) { /* DeepSeek's leading dense MLP, in the model's expert format (fp8) */
      model d = *m;
      orc_plain dp;
      orc_spec sp;
      memset(&sp, 0, sizeof sp);
      sp.prec = plain_prec(m->fmt), sp.E = 1, sp.N = m->Ndense, sp.K = K, sp.block_n = sp.block_k = 128;
      sp.seed = m->seed * 1000 + 900 + (uint64_t)l;
      orc_plain_make(&dp, &sp);
      plain_fixup(&dp, &d, &r);
      for (int mat = 0; mat < 3; mat++) {
        snprintf(base, sizeof base, "model.layers.%d.mlp.%s", l, proj[mat]);
        st_linear(s, shard, m, base, &dp, 0, mat, 0);
      }
      orc_plain_free(&dp);
      continue;
    }
    { /* router */
      int64_t sh[2] = {E, K};
      snprintf(name, sizeof name, mix ? "model.layers.%d.block_sparse_moe.gate.weight"
                                      : oss ? "model.layers.%d.mlp.router.weight" : "model.layers.%d.mlp.gate.weight",
               l);
      st_values(s, shard, name, m->rd, 2, sh, L->rw);
      if (L->rb) {
        snprintf(name, sizeof name, "model.layers.%d.mlp.router.bias", l);
        st_values(s, shard, name, m->rd, 1, sh, L->rb);
      }
      if (L->corr) {
        snprintf(name, sizeof name, "model.layers.%d.mlp.gate.e_score_correction_bias", l);
        st_values(s, shard, name, RD_F32, 1, sh, L->corr);
      }
    }
    if (oss) st_oss_experts(s, shard, m, l, &L->ex);
    else
      for (int64_t e = 0; e < E; e++) {
        if (split_l && l == split_l && e == split_e) shard = 2;
        for (int mat = 0; mat < 3; mat++) {
          if (mix) snprintf(base, sizeof base, "model.layers.%d.block_sparse_moe.experts.%lld.%s", l, (long long)e, mixtral_w[mat]);
          else snprintf(base, sizeof base, "model.layers.%d.mlp.experts.%lld.%s", l, (long long)e, proj[mat]);
          st_linear(s, shard, m, base, &L->ex, e, mat, act_order);
        }
      }
    if (m->Nsh) {
      for (int mat = 0; mat < 3; mat++) {
        snprintf(base, sizeof base, m->arch == MOE_CKPT_QWEN2_MOE ? "model.layers.%d.mlp.shared_expert.%s"
                                                                 : "model.layers.%d.mlp.shared_experts.%s",
                 l, proj[mat]);
        st_linear(s, shard, m, base, &L->sh, 0, mat, 0);
      }
      if (L->sgate) { /* nn.Linear(hidden, 1): [1, K] */
        int64_t sh[2] = {1, K};
        snprintf(name, sizeof name, "model.layers.%d.mlp.shared_expert_gate.weight", l);
        st_values(s, shard, name, m->rd, 2, sh, L->sgate);
      }
    }
  }
  st_filler(s, shard, "model.norm.weight", m->rd, K, 0, 1, &r);
  st_filler(s, shard, "lm_head.weight", m->rd, VOCAB, K, 0, &r);
}

/* config.json, as the released models' (keys as transformers writes them) */
static cw_json *build_config(const model *m, int act_order) {
  cw_json *c = cw_json_new();
  const char *dtype = m->fmt == F_F16 || m->fmt == F_AWQ || m->fmt == F_GPTQ ? "\"float16\"" : "\"bfloat16\"";
  cw_json_raw(c, "hidden_size", "%lld", (long long)m->K);
  cw_json_raw(c, "num_hidden_layers", "%lld", (long long)m->n_layers);
  cw_json_raw(c, "num_experts_per_tok", "%d", m->topk);
  cw_json_raw(c, "vocab_size", "%d", VOCAB);
  cw_json_raw(c, "torch_dtype", "%s", dtype);
  cw_json_str(c, "transformers_version", "4.51.0");
  cw_json_raw(c, "tie_word_embeddings", "false");
  cw_json_raw(c, "use_cache", "true");
  cw_json_str(c, "hidden_act", "silu");
  cw_json_raw(c, "rms_norm_eps", "1e-06");
  cw_json_raw(c, "max_position_embeddings", "4096");
  cw_json_raw(c, "num_attention_heads", "4");
  cw_json_raw(c, "num_key_value_heads", "2");
  cw_json_raw(c, "initializer_range", "0.02");
  cw_json_raw(c, "attention_dropout", "0.0");
  switch (m->arch) {
  case MOE_CKPT_MIXTRAL: {
    const char *a[1] = {"\"MixtralForCausalLM\""};
    cw_json_arr(c, "architectures", 1, a);
    cw_json_str(c, "model_type", "mixtral");
    cw_json_raw(c, "intermediate_size", "%lld", (long long)m->N);
    cw_json_raw(c, "num_local_experts", "%lld", (long long)m->E);
    cw_json_raw(c, "output_router_logits", "false");
    cw_json_raw(c, "router_aux_loss_coef", "0.02");
    cw_json_raw(c, "rope_theta", "1000000.0");
    cw_json_raw(c, "sliding_window", "null");
  } break;
  case MOE_CKPT_QWEN2_MOE:
  case MOE_CKPT_QWEN3_MOE: {
    const char *a2[1] = {"\"Qwen2MoeForCausalLM\""}, *a3[1] = {"\"Qwen3MoeForCausalLM\""};
    int q2 = m->arch == MOE_CKPT_QWEN2_MOE;
    cw_json_arr(c, "architectures", 1, q2 ? a2 : a3);
    cw_json_str(c, "model_type", q2 ? "qwen2_moe" : "qwen3_moe");
    cw_json_raw(c, "intermediate_size", "%lld", (long long)(3 * m->N));
    cw_json_raw(c, "moe_intermediate_size", "%lld", (long long)m->N);
    cw_json_raw(c, "num_experts", "%lld", (long long)m->E);
    cw_json_raw(c, "norm_topk_prob", m->norm ? "true" : "false");
    cw_json_raw(c, "decoder_sparse_step", "1");
    cw_json_arr(c, "mlp_only_layers", 0, NULL);
    cw_json_raw(c, "output_router_logits", "false");
    cw_json_raw(c, "router_aux_loss_coef", "0.001");
    cw_json_raw(c, "rope_theta", "1000000.0");
    cw_json_raw(c, "sliding_window", "null");
    cw_json_raw(c, "use_sliding_window", "false");
    cw_json_raw(c, "max_window_layers", "%lld", (long long)m->n_layers);
    if (q2) cw_json_raw(c, "shared_expert_intermediate_size", "%lld", (long long)m->Nsh);
    else cw_json_raw(c, "head_dim", "16");
    if (m->fmt == F_AWQ) { /* AutoAWQ AwqConfig.to_transformers_dict */
      cw_json *q = cw_json_new();
      const char *keep[1] = {"\"gate\""};
      cw_json_str(q, "quant_method", "awq");
      cw_json_raw(q, "zero_point", "true");
      cw_json_raw(q, "group_size", "%d", m->group);
      cw_json_raw(q, "bits", "4");
      cw_json_str(q, "version", "gemm");
      cw_json_arr(q, "modules_to_not_convert", 1, keep);
      cw_json_obj(c, "quantization_config", q);
    }
    if (m->fmt == F_GPTQ) { /* AutoGPTQ BaseQuantizeConfig.to_dict */
      cw_json *q = cw_json_new();
      cw_json_raw(q, "bits", "4");
      cw_json_raw(q, "group_size", "%d", m->group);
      cw_json_raw(q, "damp_percent", "0.01");
      cw_json_raw(q, "desc_act", act_order ? "true" : "false");
      cw_json_raw(q, "static_groups", "false");
      cw_json_raw(q, "sym", "false");
      cw_json_raw(q, "true_sequential", "true");
      cw_json_raw(q, "model_name_or_path", "null");
      cw_json_str(q, "model_file_base_name", "model");
      cw_json_str(q, "quant_method", "gptq");
      cw_json_str(q, "checkpoint_format", m->gptq_v2 ? "gptq_v2" : "gptq");
      cw_json_obj(c, "quantization_config", q);
    }
  } break;
  case MOE_CKPT_DEEPSEEK_V3: {
    const char *a[1] = {"\"DeepseekV3ForCausalLM\""}, *blk[2] = {"128", "128"};
    cw_json *q = cw_json_new();
    cw_json_arr(c, "architectures", 1, a);
    cw_json_str(c, "model_type", "deepseek_v3");
    cw_json_raw(c, "intermediate_size", "%lld", (long long)m->Ndense);
    cw_json_raw(c, "moe_intermediate_size", "%lld", (long long)m->N);
    cw_json_raw(c, "n_routed_experts", "%lld", (long long)m->E);
    cw_json_raw(c, "n_shared_experts", "%lld", (long long)(m->Nsh / m->N));
    cw_json_raw(c, "n_group", "%d", m->n_group);
    cw_json_raw(c, "topk_group", "%d", m->topk_group);
    cw_json_raw(c, "routed_scaling_factor", "%.1f", m->rsf);
    cw_json_str(c, "scoring_func", "sigmoid");
    cw_json_str(c, "topk_method", "noaux_tc");
    cw_json_raw(c, "norm_topk_prob", m->norm ? "true" : "false");
    cw_json_raw(c, "first_k_dense_replace", "%lld", (long long)m->first_dense);
    cw_json_raw(c, "moe_layer_freq", "1");
    cw_json_raw(c, "num_nextn_predict_layers", "1");
    cw_json_raw(c, "kv_lora_rank", "32");
    cw_json_raw(c, "q_lora_rank", "48");
    cw_json_raw(c, "qk_nope_head_dim", "16");
    cw_json_raw(c, "qk_rope_head_dim", "8");
    cw_json_raw(c, "v_head_dim", "16");
    cw_json_raw(c, "aux_loss_alpha", "0.001");
    cw_json_raw(c, "seq_aux", "true");
    cw_json_raw(c, "rope_theta", "10000");
    cw_json_str(q, "activation_scheme", "dynamic");
    cw_json_str(q, "fmt", "e4m3");
    cw_json_str(q, "quant_method", "fp8");
    cw_json_arr(q, "weight_block_size", 2, blk);
    cw_json_obj(c, "quantization_config", q);
  } break;
  case MOE_CKPT_GPT_OSS: {
    const char *a[1] = {"\"GptOssForCausalLM\""};
    const char *keep[4] = {"\"model.layers.*.self_attn\"", "\"model.layers.*.mlp.router\"", "\"model.embed_tokens\"",
                           "\"lm_head\""};
    const char *types[4] = {"\"sliding_attention\"", "\"full_attention\"", "\"sliding_attention\"", "\"full_attention\""};
    cw_json *q = cw_json_new();
    cw_json_arr(c, "architectures", 1, a);
    cw_json_str(c, "model_type", "gpt_oss");
    cw_json_raw(c, "intermediate_size", "%lld", (long long)m->N);
    cw_json_raw(c, "num_local_experts", "%lld", (long long)m->E);
    cw_json_raw(c, "experts_per_token", "%d", m->topk);
    cw_json_raw(c, "swiglu_limit", "7.0");
    cw_json_raw(c, "attention_bias", "true");
    cw_json_raw(c, "head_dim", "16");
    cw_json_raw(c, "sliding_window", "128");
    cw_json_raw(c, "router_aux_loss_coef", "0.9");
    cw_json_raw(c, "output_router_logits", "false");
    cw_json_raw(c, "rope_theta", "150000");
    cw_json_arr(c, "layer_types", (int)m->n_layers, types);
    cw_json_arr(q, "modules_to_not_convert", 4, keep);
    cw_json_str(q, "quant_method", "mxfp4");
    cw_json_obj(c, "quantization_config", q);
  } break;
  default: break;
  }
  return c;
}

/* ==== writing: GGUF ==================================================================================== */
static uint32_t ggml_type_of(int fmt) {
  switch (fmt) {
  case F_BF16: return CW_GGML_BF16;
  case F_F16: return CW_GGML_F16;
  case F_Q4_0: return CW_GGML_Q4_0;
  case F_Q8_0: return CW_GGML_Q8_0;
  case F_MXFP4: return CW_GGML_MXFP4;
  default: return CW_GGML_F32;
  }
}
/* One row (cols elements) of plain matrix pm, plain row `prow_index`, in the file's ggml type. */
static void gguf_row(cw_buf *b, const model *m, const orc_plain *p, const q8w *q8, int pm, int64_t prow_index) {
  const moe_weights *w = p ? &p->w : NULL;
  const int64_t cols = pm ? (q8 ? q8->N : w->N) : (q8 ? q8->K : w->K);
  uint8_t blk[34], codes[32];
  switch (m->fmt) {
  case F_BF16:
  case F_F16: cw_put(b, (const uint16_t *)p->q[pm] + prow_index * cols, (size_t)cols * 2); break;
  case F_Q4_0: {
    const int64_t ng = cols / 32;
    const uint8_t *row = (const uint8_t *)p->q[pm] + prow_index * (cols / 2);
    for (int64_t g = 0; g < ng; g++) {
      for (int j = 0; j < 32; j++) codes[j] = (uint8_t)nib(row, 32 * g + j);
      cw_block_q4_0(blk, orc_to_f16_bits(p->s[pm][prow_index * ng + g]), codes);
      cw_put(b, blk, 18);
    }
  } break;
  case F_MXFP4: {
    const int64_t ng = cols / 32;
    const uint8_t *row = (const uint8_t *)p->q[pm] + prow_index * (cols / 2);
    for (int64_t g = 0; g < ng; g++) {
      for (int j = 0; j < 32; j++) codes[j] = (uint8_t)nib(row, 32 * g + j);
      cw_block_mxfp4(blk, p->x8[pm][prow_index * ng + g], codes);
      cw_put(b, blk, 17);
    }
  } break;
  case F_Q8_0:
    for (int64_t g = 0; g < cols / 32; g++) {
      cw_block_q8_0(blk, q8->d[pm][prow_index * (cols / 32) + g], q8->q[pm] + prow_index * cols + 32 * g);
      cw_put(b, blk, 34);
    }
    break;
  default: break;
  }
}
/* gate (mat 0), up (1) or down (2) of all E experts of a plain matrix set as one [E, rows, cols] tensor
 * (single: one [rows, cols] matrix, for the shared expert and the dense FFN) */
static void gguf_experts(cw_gguf *g, const model *m, const char *name, const orc_plain *p, const q8w *q8, int mat,
                         int single) {
  const int64_t E = q8 ? q8->E : p->w.E, N = q8 ? q8->N : p->w.N, K = q8 ? q8->K : p->w.K;
  const int64_t rows = mat < 2 ? N : K, cols = mat < 2 ? K : N, prow = mat < 2 ? 2 * N : K, row0 = mat == 1 ? N : 0;
  cw_buf b = {0, 0, 0};
  for (int64_t e = 0; e < E; e++)
    for (int64_t r = 0; r < rows; r++) gguf_row(&b, m, p, q8, mat == 2, e * prow + row0 + r);
  if (single) cw_gguf_tensor2(g, name, ggml_type_of(m->fmt), rows, cols, b.p);
  else cw_gguf_tensor3(g, name, ggml_type_of(m->fmt), E, rows, cols, b.p);
  cw_buf_free(&b);
}
static void gguf_f32(cw_gguf *g, const char *name, int n_dims, int64_t a, int64_t b, const double *v) {
  int64_t n = a * (n_dims == 2 ? b : 1);
  float *f = (float *)test_malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
  if (n_dims == 1) cw_gguf_tensor1(g, name, CW_GGML_F32, a, f);
  else cw_gguf_tensor2(g, name, CW_GGML_F32, a, b, f);
  free(f);
}
static void gguf_filler(cw_gguf *g, const char *name, uint32_t type, int64_t a, int64_t b, int norm, kit_rng *r) {
  int64_t n = a * (b ? b : 1);
  double *v = dalloc(n);
  for (int64_t i = 0; i < n; i++) v[i] = norm ? 1.0 + 0.1 * kit_normal(r) : 0.1 * kit_normal(r);
  if (type == CW_GGML_F32) gguf_f32(g, name, b ? 2 : 1, a, b, v);
  else {
    uint16_t *h = (uint16_t *)test_malloc(sizeof(uint16_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) h[i] = type == CW_GGML_BF16 ? orc_to_bf16_bits(v[i]) : orc_to_f16_bits(v[i]);
    if (b) cw_gguf_tensor2(g, name, type, a, b, h);
    else cw_gguf_tensor1(g, name, type, a, h);
    free(h);
  }
  free(v);
}

static const char *gguf_arch_name(moe_ckpt_arch a) {
  switch (a) {
  case MOE_CKPT_QWEN2_MOE: return "qwen2moe";
  case MOE_CKPT_QWEN3_MOE: return "qwen3moe";
  case MOE_CKPT_DEEPSEEK_V3: return "deepseek2";
  case MOE_CKPT_GPT_OSS: return "gpt-oss";
  default: return "llama";
  }
}

/* A GGUF file as llama.cpp's convert_hf_to_gguf.py (+ llama-quantize) writes the model: metadata from
 * the HF config (TextModel.set_gguf_parameters, then the model's class: Qwen2MoeModel adds
 * expert_feed_forward_length and expert_shared_feed_forward_length, DeepseekV2Model
 * leading_dense_block_count, expert_shared_count, expert_weights_scale, expert_weights_norm; the base
 * adds expert_group_count / expert_group_used_count from n_group / topk_group and expert_gating_func
 * from scoring_func; GptOssModel expert_feed_forward_length). Tensor types (prepare_tensors): 1-D
 * tensors, *_norm.weight, the router ffn_gate_inp and every tensor whose name does not end in
 * ".weight" (biases, exp_probs_b.bias) in F32, the rest in the file type. The experts are merged into
 * ffn_{gate,up,down}_exps [E, rows, cols] (Qwen2MoeModel / DeepseekV2Model modify_tensors); gpt-oss's
 * interleaved gate_up is split into gate [::2] and up [1::2] (GptOssModel, fuse_gate_up_exps off),
 * its mxfp4 blocks repacked into ggml MXFP4 blocks (repack_mxfp4: same e8m0, nibbles to the
 * j / j + 16 layout). qwen3moe and qwen2moe carry no expert_weights_norm: llama.cpp's graphs fix it
 * (src/models/qwen3moe.cpp build_moe_ffn norm_w true, qwen2moe.cpp false). */
static void build_gguf(const model *m, cw_gguf *g, uint32_t version, uint32_t alignment) {
  const int64_t E = m->E, N = m->N, K = m->K;
  const uint32_t side = m->fmt == F_BF16 ? CW_GGML_BF16 : CW_GGML_F16;
  kit_rng r = kit_rng_stream(m->seed, 19);
  char name[128];
  cw_gguf_init(g, gguf_arch_name(m->arch), version);
  cw_gguf_kv_str(g, "general.type", "model");
  cw_gguf_kv_str(g, "general.name", m->name);
  cw_gguf_arch_u32(g, "block_count", (uint32_t)m->n_layers);
  cw_gguf_arch_u32(g, "context_length", 4096);
  cw_gguf_arch_u32(g, "embedding_length", (uint32_t)K);
  cw_gguf_arch_u32(g, "feed_forward_length", (uint32_t)(m->Ndense ? m->Ndense : 3 * N));
  cw_gguf_arch_u32(g, "attention.head_count", 4);
  cw_gguf_arch_u32(g, "attention.head_count_kv", 2);
  cw_gguf_arch_f32(g, "attention.layer_norm_rms_epsilon", 1e-6f);
  cw_gguf_arch_u32(g, "expert_count", (uint32_t)E);
  cw_gguf_arch_u32(g, "expert_used_count", (uint32_t)m->topk);
  if (m->arch == MOE_CKPT_DEEPSEEK_V3) { /* DeepseekV2Model + TextModel (n_group, topk_group, scoring_func) */
    cw_gguf_arch_u32(g, "expert_group_count", (uint32_t)m->n_group);
    cw_gguf_arch_u32(g, "expert_group_used_count", (uint32_t)m->topk_group);
    cw_gguf_arch_u32(g, "expert_gating_func", CW_GATING_SIGMOID);
    cw_gguf_arch_u32(g, "leading_dense_block_count", (uint32_t)m->first_dense);
    cw_gguf_arch_u32(g, "expert_feed_forward_length", (uint32_t)N);
    cw_gguf_arch_u32(g, "expert_shared_count", (uint32_t)(m->Nsh / N));
    cw_gguf_arch_f32(g, "expert_weights_scale", (float)m->rsf);
    cw_gguf_arch_bool(g, "expert_weights_norm", m->norm);
  } else {
    cw_gguf_arch_u32(g, "expert_feed_forward_length", (uint32_t)N);
    if (m->arch == MOE_CKPT_QWEN2_MOE) cw_gguf_arch_u32(g, "expert_shared_feed_forward_length", (uint32_t)m->Nsh);
    if (m->arch == MOE_CKPT_GPT_OSS) cw_gguf_arch_u32(g, "attention.sliding_window", 128);
  }
  cw_gguf_kv_u32(g, "general.file_type", m->fmt == F_BF16 ? CW_FTYPE_MOSTLY_BF16 : m->fmt == F_F16 ? CW_FTYPE_MOSTLY_F16
                                         : m->fmt == F_Q4_0 ? CW_FTYPE_MOSTLY_Q4_0 : m->fmt == F_Q8_0 ? CW_FTYPE_MOSTLY_Q8_0
                                                                                   : CW_FTYPE_MOSTLY_MXFP4_MOE);
  cw_gguf_kv_u32(g, "general.quantization_version", 2); /* prepare_metadata: add_quantization_version, always */
  if (alignment) cw_gguf_alignment(g, alignment);

  gguf_filler(g, "token_embd.weight", side, VOCAB, K, 0, &r);
  for (int l = 0; l < m->n_layers; l++) {
    const lay *L = &m->L[l];
    snprintf(name, sizeof name, "blk.%d.attn_norm.weight", l);
    gguf_filler(g, name, CW_GGML_F32, K, 0, 1, &r);
    snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", l);
    gguf_filler(g, name, CW_GGML_F32, K, 0, 1, &r);
    if (!L->moe) { /* leading dense FFN: blk.N.ffn_{gate,up,down}.weight */
      orc_plain dp;
      orc_spec sp;
      static const char *const nm[3] = {"ffn_gate", "ffn_up", "ffn_down"};
      memset(&sp, 0, sizeof sp);
      sp.prec = plain_prec(m->fmt), sp.E = 1, sp.N = m->Ndense, sp.K = K, sp.seed = m->seed * 1000 + 900 + (uint64_t)l;
      orc_plain_make(&dp, &sp);
      for (int mat = 0; mat < 3; mat++) {
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, nm[mat]);
        gguf_experts(g, m, name, &dp, NULL, mat, 1);
      }
      orc_plain_free(&dp);
      continue;
    }
    snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.weight", l);
    gguf_f32(g, name, 2, E, K, L->rw);
    if (L->rb) {
      snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.bias", l);
      gguf_f32(g, name, 1, E, 0, L->rb);
    }
    if (L->corr) {
      snprintf(name, sizeof name, "blk.%d.exp_probs_b.bias", l);
      gguf_f32(g, name, 1, E, 0, L->corr);
    }
    {
      static const char *const nm[3] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
      const int q = m->fmt == F_Q8_0;
      for (int mat = 0; mat < 3; mat++) {
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, nm[mat]);
        gguf_experts(g, m, name, q ? NULL : &L->ex, q ? &L->qx : NULL, mat, 0);
      }
      if (m->bias) { /* gpt-oss: gate_up_proj_bias split into [::2] and [1::2] by the converter */
        double *bg = dalloc(E * N), *bu = dalloc(E * N), *bd = dalloc(E * K);
        for (int64_t e = 0; e < E; e++) {
          for (int64_t i = 0; i < N; i++) bg[e * N + i] = L->ex.b13[e * 2 * N + i], bu[e * N + i] = L->ex.b13[e * 2 * N + N + i];
          for (int64_t k = 0; k < K; k++) bd[e * K + k] = L->ex.b2[e * K + k];
        }
        snprintf(name, sizeof name, "blk.%d.ffn_gate_exps.bias", l);
        gguf_f32(g, name, 2, E, N, bg);
        snprintf(name, sizeof name, "blk.%d.ffn_up_exps.bias", l);
        gguf_f32(g, name, 2, E, N, bu);
        snprintf(name, sizeof name, "blk.%d.ffn_down_exps.bias", l);
        gguf_f32(g, name, 2, E, K, bd);
        free(bg), free(bu), free(bd);
      }
      if (m->Nsh) {
        static const char *const sn[3] = {"ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp"};
        for (int mat = 0; mat < 3; mat++) {
          snprintf(name, sizeof name, "blk.%d.%s.weight", l, sn[mat]);
          gguf_experts(g, m, name, q ? NULL : &L->sh, q ? &L->qs : NULL, mat, 1);
        }
      }
    }
    if (L->sgate) { /* shared_expert_gate.weight [1, K]: ne [K, 1], 2-D, so kept in the source type (bf16)
                       and left unquantized by llama-quantize (ggml_n_dims 1) */
      uint16_t *h = (uint16_t *)test_malloc(sizeof(uint16_t) * (size_t)K);
      for (int64_t k = 0; k < K; k++) h[k] = orc_to_bf16_bits(L->sgate[k]);
      snprintf(name, sizeof name, "blk.%d.ffn_gate_inp_shexp.weight", l);
      cw_gguf_tensor2(g, name, CW_GGML_BF16, 1, K, h);
      free(h);
    }
  }
  gguf_filler(g, "output_norm.weight", CW_GGML_F32, K, 0, 1, &r);
  gguf_filler(g, "output.weight", side, VOCAB, K, 0, &r);
}

/* ==== the test's own routing (float64, after the transformers reference of each model) ============== */
/* Sorted ids of the top n of score[0..E) (ties to the lower id). */
static void top_ids(const double *score, int64_t E, int64_t n, int32_t *ids) {
  int used[1024] = {0};
  for (int64_t j = 0; j < n; j++) {
    int64_t best = -1;
    for (int64_t e = 0; e < E; e++)
      if (!used[e] && (best < 0 || score[e] > score[best])) best = e;
    used[best] = 1;
    ids[j] = (int32_t)best;
  }
}
/* Routes token x; returns the smallest selection gap (< GAP_MIN: draw the token again). logit: [E]. */
static double route_ref(const model *m, const lay *L, const float *x, double *logit, int32_t *ids, double *wts) {
  const int64_t E = m->E, K = m->K, k = m->topk;
  double sel[256], p[256], gap = 1e30;
  int32_t order[256];
  for (int64_t e = 0; e < E; e++) {
    double d = 0;
    for (int64_t i = 0; i < K; i++) d += (double)x[i] * L->rw[e * K + i];
    logit[e] = d + (L->rb ? L->rb[e] : 0.0);
  }
  if (m->arch == MOE_CKPT_DEEPSEEK_V3) {
    const int64_t G = m->n_group, per = E / G;
    double gs[64];
    int32_t gorder[64];
    for (int64_t e = 0; e < E; e++) p[e] = orc_sigmoid(logit[e]), sel[e] = p[e] + L->corr[e];
    for (int64_t g = 0; g < G; g++) { /* sum of the top-2 biased scores of the group */
      int32_t t2[2];
      top_ids(sel + g * per, per, 2, t2);
      gs[g] = sel[g * per + t2[0]] + sel[g * per + t2[1]];
    }
    top_ids(gs, G, G, gorder);
    if (m->topk_group < G) gap = gs[gorder[m->topk_group - 1]] - gs[gorder[m->topk_group]];
    for (int64_t j = m->topk_group; j < G; j++) /* masked_fill(~score_mask, 0.0) */
      for (int64_t e = 0; e < per; e++) sel[gorder[j] * per + e] = 0.0;
  } else if (m->arch == MOE_CKPT_GPT_OSS) {
    for (int64_t e = 0; e < E; e++) sel[e] = logit[e];
  } else { /* softmax over all experts */
    double mx = -1e300, s = 0;
    for (int64_t e = 0; e < E; e++) mx = logit[e] > mx ? logit[e] : mx;
    for (int64_t e = 0; e < E; e++) s += p[e] = exp(logit[e] - mx);
    for (int64_t e = 0; e < E; e++) sel[e] = p[e] /= s;
  }
  top_ids(sel, E, E, order);
  if (k < E && sel[order[k - 1]] - sel[order[k]] < gap) gap = sel[order[k - 1]] - sel[order[k]];
  if (sel[order[k - 1]] < GAP_MIN) gap = 0; /* DeepSeek: a chosen score must beat the masked 0.0 clearly */
  for (int64_t j = 0; j < k; j++) ids[j] = order[j];
  if (m->arch == MOE_CKPT_GPT_OSS) { /* softmax over the top-k logits */
    double mx = logit[ids[0]], s = 0;
    for (int64_t j = 0; j < k; j++) s += wts[j] = exp(logit[ids[j]] - mx);
    for (int64_t j = 0; j < k; j++) wts[j] /= s;
  } else {
    double s = 0;
    for (int64_t j = 0; j < k; j++) s += wts[j] = p[ids[j]];
    if (m->norm)
      for (int64_t j = 0; j < k; j++) wts[j] /= s + (m->arch == MOE_CKPT_DEEPSEEK_V3 ? 1e-20 : 0.0);
    if (m->arch == MOE_CKPT_DEEPSEEK_V3)
      for (int64_t j = 0; j < k; j++) wts[j] *= m->rsf;
  }
  return gap;
}

/* ==== a float64 reference on dense weights (for Q8_0: the library requantizes, the oracle's plain INT8
 * layout cannot hold Q8_0's block scales); the oracle's activation rules for the precision p ====== */
static void dense_expert(moe_precision p, const double *w13, const double *w2, int64_t N, int64_t K, const double *xa,
                         double wt, double *acc) {
  double *pre = dalloc(2 * N), *h = dalloc(N), *ha = dalloc(N);
  for (int64_t r = 0; r < 2 * N; r++) {
    double d = 0;
    for (int64_t k = 0; k < K; k++) d += xa[k] * w13[r * K + k];
    pre[r] = d;
  }
  for (int64_t i = 0; i < N; i++) h[i] = orc_act(MOE_ACT_SILU, pre[i], pre[N + i], 1.702, 7.0);
  orc_act_input(p, h, N, ha);
  for (int64_t k = 0; k < K; k++) {
    double d = 0;
    for (int64_t i = 0; i < N; i++) d += ha[i] * w2[k * N + i];
    acc[k] += d * wt;
  }
  free(pre), free(h), free(ha);
}
static void dense_ref(const model *m, const lay *L, moe_precision p, const float *x, int64_t M, const int32_t *ids,
                      const float *wts, double *out) {
  const int64_t N = m->N, K = m->K;
  double *xv = dalloc(K), *xa = dalloc(K);
  for (int64_t t = 0; t < M; t++) {
    double *o = out + t * K;
    for (int64_t k = 0; k < K; k++) xv[k] = x[t * K + k], o[k] = 0;
    orc_act_input(p, xv, K, xa);
    for (int32_t j = 0; j < m->topk; j++) {
      int64_t e = ids[t * m->topk + j];
      dense_expert(p, L->qx.v[0] + e * 2 * N * K, L->qx.v[1] + e * K * N, N, K, xa, wts[t * m->topk + j], o);
    }
    if (m->Nsh) {
      double g = 1.0;
      if (L->sgate) {
        double d = 0;
        for (int64_t k = 0; k < K; k++) d += xv[k] * (double)L->sgate_f[k];
        g = orc_sigmoid(d);
      }
      dense_expert(p, L->qs.v[0], L->qs.v[1], m->Nsh, K, xa, g, o);
    }
  }
  free(xv), free(xa);
}

/* ==== one layer through the reader and the library ==================================================== */
static moe_precision expected_prec(int fmt, int asked) {
  if (asked != MOE_CKPT_AUTO) return (moe_precision)asked;
  return plain_prec(fmt);
}

/* rows of the loaded plain weights against the test's (dequantized by oracle.h) */
/* A pool of three threads, each running the items i = t (mod 3) backwards: moe_parallel's contract,
 * in an order no serial loop has. */
typedef struct tri_job {
  void (*fn)(void *, int64_t);
  void *arg;
  int64_t n, t;
} tri_job;
static void *tri_thread(void *p) {
  tri_job *j = (tri_job *)p;
  for (int64_t i = j->n - 1 - ((j->n - 1 - j->t) % 3 + 3) % 3; i >= 0; i -= 3) j->fn(j->arg, i);
  return NULL;
}
static void tri_parallel_for(void *pool, void (*fn)(void *, int64_t), void *arg, int64_t n) {
  pthread_t th[3];
  tri_job j[3];
  (void)pool;
  for (int t = 0; t < 3; t++) j[t].fn = fn, j[t].arg = arg, j[t].n = n, j[t].t = t, pthread_create(&th[t], NULL, tri_thread, &j[t]);
  for (int t = 0; t < 3; t++) pthread_join(th[t], NULL);
}

/* moe_ckpt_load_layer_parallel on three threads gives the bytes of the serial load (compared packed). */
static void check_parallel_load(const char *tag, const moe_ckpt *ck, int64_t l, int precision, const moe_ckpt_layer *serial) {
  const moe_parallel par = {tri_parallel_for, NULL, 3};
  moe_ckpt_layer PL;
  moe_ckpt_error err;
  moe_status st;
  memset(&err, 0, sizeof err);
  st = moe_ckpt_load_layer_parallel(ck, l, precision, &PL, &err, &par);
  CHECK(st == MOE_OK, "%s: moe_ckpt_load_layer_parallel: %s (%s)", tag, moe_status_str(st), err.msg);
  if (st != MOE_OK) return;
  for (int which = 0; which < 2; which++) {
    const moe_weights *a = which ? &serial->shared : &serial->experts, *b = which ? &PL.shared : &PL.experts;
    const size_t n = a->E ? moe_pack_size(a) : 0;
    moe_experts xa, xb;
    void *ba, *bb;
    if (!n) continue;
    ba = test_malloc(n), bb = test_malloc(n);
    memset(ba, 0, n), memset(bb, 0, n);
    /* the panels, wherever in its buffer each pack put them (alignment) */
    CHECK(moe_pack(a, &xa, ba, n) == MOE_OK && moe_pack(b, &xb, bb, n) == MOE_OK &&
              !memcmp(xa.w13, xb.w13, (size_t)xa.E * (size_t)xa.panels13 * xa.panel13_bytes) &&
              !memcmp(xa.w2, xb.w2, (size_t)xa.E * (size_t)xa.panels2 * xa.panel2_bytes) &&
              (!xa.b13 || (!memcmp(xa.b13, xb.b13, (size_t)(xa.E * 2 * xa.N) * sizeof(float)) &&
                           !memcmp(xa.b2, xb.b2, (size_t)(xa.E * xa.K) * sizeof(float)))),
          "%s: %s loaded on three threads differ from the serial load", tag, which ? "shared expert" : "experts");
    free(ba), free(bb);
  }
  moe_ckpt_layer_free(&PL);
  { /* loaded straight into packed experts: the panels of moe_pack on the serial load */
    moe_experts px, ps;
    memset(&err, 0, sizeof err);
    st = moe_ckpt_load_layer_packed(ck, l, precision, &PL, &px, &ps, &err, &par);
    CHECK(st == MOE_OK, "%s: moe_ckpt_load_layer_packed: %s (%s)", tag, moe_status_str(st), err.msg);
    if (st != MOE_OK) return;
    CHECK(PL.experts.w13 == NULL && PL.experts.E == serial->experts.E && (ps.E > 0) == (serial->shared.E > 0),
          "%s: moe_ckpt_load_layer_packed's descriptors", tag);
    for (int which = 0; which < 2; which++) {
      const moe_weights *a = which ? &serial->shared : &serial->experts;
      const moe_experts *xb = which ? &ps : &px;
      const size_t n = a->E ? moe_pack_size(a) : 0;
      moe_experts xa;
      void *ba;
      if (!n) continue;
      ba = test_malloc(n);
      CHECK(moe_pack(a, &xa, ba, n) == MOE_OK && xb->magic == xa.magic && xb->E == xa.E &&
                !memcmp(xa.w13, xb->w13, (size_t)xa.E * (size_t)xa.panels13 * xa.panel13_bytes) &&
                !memcmp(xa.w2, xb->w2, (size_t)xa.E * (size_t)xa.panels2 * xa.panel2_bytes) &&
                !xa.b13 == !xb->b13 && (!xa.b13 || !memcmp(xa.b13, xb->b13, (size_t)(xa.E * 2 * xa.N) * sizeof(float))) &&
                !xa.b2 == !xb->b2 && (!xa.b2 || !memcmp(xa.b2, xb->b2, (size_t)(xa.E * xa.K) * sizeof(float))),
            "%s: %s loaded packed differ from moe_pack of the serial load", tag, which ? "shared expert" : "experts");
      free(ba);
    }
    moe_ckpt_layer_free(&PL);
  }
}

static void compare_weights(const char *tag, const moe_weights *got, const orc_plain *mine, const q8w *q8) {
  const int64_t E = got->E, N = got->N, K = got->K;
  int64_t bad = 0, total = 0;
  double worst = 0; /* Q8_0: largest |got - mine| / max|row| */
  double *a = dalloc(N > K ? N : K), *b = dalloc(N > K ? N : K);
  for (int mat = 0; mat < 2; mat++) {
    const int64_t rows = mat ? K : 2 * N, cols = mat ? N : K;
    for (int64_t e = 0; e < E; e++)
      for (int64_t r = 0; r < rows; r++) {
        orc_row(got, mat, 0, e, r, a);
        if (q8) {
          const double *v = q8->v[mat] + (e * rows + r) * cols;
          double amax = 0, err = 0;
          for (int64_t c = 0; c < cols; c++) amax = fabs(v[c]) > amax ? fabs(v[c]) : amax;
          for (int64_t c = 0; c < cols; c++) err = fabs(a[c] - v[c]) > err || a[c] != a[c] ? fabs(a[c] - v[c]) : err;
          if (!(err <= amax / 127.0)) bad++; /* within one int8 step of the row's absmax scale */
          if (amax > 0 && err / amax > worst) worst = err / amax;
          total++;
          continue;
        }
        orc_row(&mine->w, mat, 0, e, r, b);
        for (int64_t c = 0; c < cols; c++) bad += !(a[c] == b[c]);
        total += cols;
      }
  }
  if (q8) {
    printf("  %s: Q8_0 -> int8 rows: largest error %.3e of the row's absmax\n", tag, worst);
    CHECK(bad == 0, "%s: %lld of %lld rows off by more than an int8 step (worst %.3e of absmax)", tag, (long long)bad,
          (long long)total, worst);
  } else
    CHECK(bad == 0, "%s: %lld of %lld weights differ from the written values (after dequantization)", tag,
          (long long)bad, (long long)total);
  if (!q8 && mine->w.b13) {
    int64_t bb = 0;
    if (!got->b13 || !got->b2) bb = -1;
    else {
      for (int64_t i = 0; i < E * 2 * N; i++) bb += !(got->b13[i] == mine->w.b13[i]);
      for (int64_t i = 0; i < E * K; i++) bb += !(got->b2[i] == mine->w.b2[i]);
    }
    CHECK(bb == 0, "%s: expert biases: %lld differ (-1: missing)", tag, (long long)bb);
  }
  free(a), free(b);
}

static int64_t exact_diff(const float *got, const double *want, int64_t n) {
  int64_t bad = 0;
  if (!got) return -1;
  for (int64_t i = 0; i < n; i++) bad += !((double)got[i] == want[i]);
  return bad;
}

static void run_layer(const model *m, moe_ckpt *ck, int l, int precision) {
  const lay *L = &m->L[l];
  const int64_t E = m->E, K = m->K, M = M_TOK;
  const int32_t k = m->topk;
  const int q8 = m->fmt == F_Q8_0;
  char tag[160];
  moe_ckpt_layer CL;
  moe_ckpt_error err;
  moe_status st;
  moe_experts ex, shx;
  void *buf = NULL, *sbuf = NULL, *ws = NULL;
  size_t wsb = 0;
  float *x, *out, *logits, *lw, *wts;
  int32_t *lids, *ids;
  double *ref, *mylog, e_rel;
  moe_precision want = expected_prec(m->fmt, precision);
  moe_weights plain_asked;

  snprintf(tag, sizeof tag, "%s layer %d%s%s", m->name, l, precision == MOE_CKPT_AUTO ? "" : " as ",
           precision == MOE_CKPT_AUTO ? "" : moe_precision_name((moe_precision)precision));
  memset(&CL, 0, sizeof CL);
  memset(&err, 0, sizeof err);
  st = moe_ckpt_load_layer(ck, l, precision, &CL, &err);
  CHECK(st == MOE_OK, "%s: moe_ckpt_load_layer: %s (%s)", tag, moe_status_str(st), err.msg);
  if (st != MOE_OK) return;
  CHECK(CL.experts.E == E && CL.experts.N == m->N && CL.experts.K == K, "%s: experts E %lld N %lld K %lld", tag,
        (long long)CL.experts.E, (long long)CL.experts.N, (long long)CL.experts.K);
  CHECK(CL.experts.precision == want, "%s: precision %s, want %s", tag, moe_precision_name(CL.experts.precision),
        moe_precision_name(want));
  CHECK(CL.router.E == E && CL.router.topk == k, "%s: router E %d topk %d", tag, CL.router.E, CL.router.topk);
  CHECK((CL.shared.E > 0) == (m->Nsh > 0) && (!m->Nsh || (CL.shared.N == m->Nsh && CL.shared.K == K)),
        "%s: shared expert E %lld N %lld", tag, (long long)CL.shared.E, (long long)CL.shared.N);
  CHECK(CL.act == (m->arch == MOE_CKPT_GPT_OSS ? MOE_ACT_SWIGLU_OAI : MOE_ACT_SILU), "%s: activation %d", tag, (int)CL.act);
  CHECK(q8 ? CL.requant_rel_err > 0 && CL.requant_rel_err < 0.05 : CL.requant_rel_err == 0,
        "%s: requant_rel_err %.3e", tag, CL.requant_rel_err);
  CHECK(CL.how[0] != 0, "%s: empty how", tag);
  if (m->arch == MOE_CKPT_GPT_OSS)
    CHECK(fabsf(CL.alpha - 1.702f) < 1e-6f && CL.limit == 7.0f, "%s: alpha %g limit %g", tag, CL.alpha, CL.limit);
  printf("%s: %s (requant_rel_err %.3e)\n", tag, CL.how, CL.requant_rel_err);
  if (CL.experts.E != E || CL.experts.N != m->N || CL.experts.K != K || CL.router.E != E || CL.router.topk != k ||
      (CL.shared.E > 0) != (m->Nsh > 0)) {
    moe_ckpt_layer_free(&CL);
    return;
  }

  /* the loaded values against the written ones */
  plain_asked = L->ex.w;
  if (!q8) plain_asked.precision = CL.experts.precision; /* int4 asked as w4a8: same codes */
  {
    orc_plain tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.w = plain_asked;
    compare_weights(tag, &CL.experts, q8 ? NULL : &tmp, q8 ? &L->qx : NULL);
    if (m->Nsh) {
      char t2[200];
      snprintf(t2, sizeof t2, "%s shared", tag);
      tmp.w = L->sh.w;
      if (!q8) tmp.w.precision = CL.shared.precision;
      compare_weights(t2, &CL.shared, q8 ? NULL : &tmp, q8 ? &L->qs : NULL);
    }
  }
  check_parallel_load(tag, ck, l, precision, &CL);
  CHECK(exact_diff(CL.router_w, L->rw, E * K) == 0, "%s: router weight differs", tag);
  CHECK(L->rb ? exact_diff(CL.router_b, L->rb, E) == 0 : CL.router_b == NULL, "%s: router bias", tag);
  CHECK(L->corr ? exact_diff(CL.correction_bias, L->corr, E) == 0 && CL.router.correction_bias == CL.correction_bias
                : CL.correction_bias == NULL,
        "%s: correction bias", tag);
  CHECK(L->sgate ? exact_diff(CL.shared_gate, L->sgate, K) == 0 : CL.shared_gate == NULL, "%s: shared gate", tag);
  if (m->arch == MOE_CKPT_DEEPSEEK_V3)
    CHECK(CL.router.kind == MOE_ROUTE_BIASED_GROUPED && CL.router.n_group == m->n_group &&
              CL.router.topk_group == m->topk_group && fabsf(CL.router.routed_scaling_factor - (float)m->rsf) < 1e-6f,
          "%s: router kind %d groups %d/%d rsf %g", tag, (int)CL.router.kind, CL.router.n_group, CL.router.topk_group,
          CL.router.routed_scaling_factor);

  /* tokens whose routing has no near-tie */
  x = (float *)test_malloc(sizeof(float) * (size_t)(M * K));
  ids = (int32_t *)test_malloc(sizeof(int32_t) * (size_t)(M * k));
  wts = (float *)test_malloc(sizeof(float) * (size_t)(M * k));
  mylog = dalloc(M * E);
  {
    kit_rng r = kit_rng_stream(m->seed, 500 + (uint64_t)l);
    for (int64_t t = 0; t < M; t++) {
      double w[64];
      int tries = 0;
      for (;;) {
        for (int64_t i = 0; i < K; i++) {
          do x[t * K + i] = (float)kit_normal(&r);
          while (x[t * K + i] == 0);
        }
        if (route_ref(m, L, x + t * K, mylog + t * E, ids + t * k, w) >= GAP_MIN || ++tries > 1000) break;
      }
      for (int32_t j = 0; j < k; j++) wts[t * k + j] = (float)w[j];
    }
  }
  /* the reader's logits and the library's routing */
  logits = (float *)test_malloc(sizeof(float) * (size_t)(M * E));
  lw = (float *)test_malloc(sizeof(float) * (size_t)(M * k));
  lids = (int32_t *)test_malloc(sizeof(int32_t) * (size_t)(M * k));
  moe_ckpt_router_logits(&CL, x, M, logits);
  {
    int64_t bad = 0, bad_ids = 0, bad_w = 0;
    for (int64_t i = 0; i < M * E; i++) bad += !(fabs((double)logits[i] - mylog[i]) <= 1e-5 * (1 + fabs(mylog[i])));
    CHECK(bad == 0, "%s: %lld router logits differ from the float64 ones", tag, (long long)bad);
    st = moe_route(&CL.router, logits, MOE_F32, M, lw, lids);
    CHECK(st == MOE_OK, "%s: moe_route with the layer's router: %s", tag, moe_status_str(st));
    for (int64_t t = 0; st == MOE_OK && t < M; t++)
      for (int32_t j = 0; j < k; j++) {
        int found = -1;
        for (int32_t i = 0; i < k; i++)
          if (lids[t * k + i] == ids[t * k + j]) found = i;
        if (found < 0) bad_ids++;
        else bad_w += !(fabs((double)lw[t * k + found] - wts[t * k + j]) <= 1e-5 * (1 + fabs(wts[t * k + j])));
      }
    CHECK(bad_ids == 0 && bad_w == 0, "%s: routing: %lld experts and %lld weights differ from the reference routing",
          tag, (long long)bad_ids, (long long)bad_w);
  }

  /* pack and run */
  out = (float *)test_malloc(sizeof(float) * (size_t)(M * K));
  test_poison(out, sizeof(float) * (size_t)(M * K));
  ref = dalloc(M * K);
  {
    size_t n = moe_pack_size(&CL.experts), ns = CL.shared.E ? moe_pack_size(&CL.shared) : 0;
    moe_call c = MOE_ZERO_INIT;
    CHECK(n > 0 && (!CL.shared.E || ns > 0), "%s: moe_pack_size 0", tag);
    buf = test_malloc(n);
    st = moe_pack(&CL.experts, &ex, buf, n);
    CHECK(st == MOE_OK, "%s: moe_pack: %s", tag, moe_status_str(st));
    if (st == MOE_OK && CL.shared.E) {
      sbuf = test_malloc(ns);
      st = moe_pack(&CL.shared, &shx, sbuf, ns);
      CHECK(st == MOE_OK, "%s: moe_pack (shared): %s", tag, moe_status_str(st));
    }
    if (st == MOE_OK) {
      c.x = x, c.out = out, c.dtype = MOE_F32, c.M = M, c.topk = k, c.act = CL.act, c.alpha = CL.alpha, c.limit = CL.limit;
      c.shared = CL.shared.E ? &shx : NULL;
      c.shared_gate = CL.shared_gate;
      st = moe_forward_workspace_size(&ex, &CL.router, &c, &wsb);
      CHECK(st == MOE_OK, "%s: moe_forward_workspace_size: %s", tag, moe_status_str(st));
      if (st == MOE_OK) {
        ws = test_malloc(wsb);
        st = moe_forward(&ex, &CL.router, logits, MOE_F32, &c, ws, wsb, NULL);
        CHECK(st == MOE_OK, "%s: moe_forward: %s", tag, moe_status_str(st));
      }
    }
  }
  if (st == MOE_OK) {
    double tol = q8 ? TOL_Q8 : TOL_F32;
    if (q8) dense_ref(m, L, CL.experts.precision, x, M, ids, wts, ref);
    else {
      oracle_moe p;
      moe_weights sw = L->sh.w;
      memset(&p, 0, sizeof p);
      sw.precision = plain_asked.precision;
      p.w = &plain_asked;
      p.shared = m->Nsh ? &sw : NULL;
      p.shared_gate = L->sgate_f;
      p.dtype = MOE_F32, p.x = x, p.M = M, p.topk = k, p.topk_weights = wts, p.topk_ids = ids;
      p.act = m->arch == MOE_CKPT_GPT_OSS ? MOE_ACT_SWIGLU_OAI : MOE_ACT_SILU;
      p.alpha = 1.702f, p.limit = 7.0f; /* gpt-oss: swiglu alpha (GptOssExperts) and config swiglu_limit */
      oracle_run(&p, ref);
    }
    e_rel = orc_rel_err(MOE_F32, out, K, ref, M, K, NULL);
    printf("  %s: M %lld E %lld N %lld K %lld topk %d: rel_err %.3e (tol %.0e)\n", tag, (long long)M, (long long)E,
           (long long)m->N, (long long)K, k, e_rel, tol);
    CHECK(e_rel <= tol, "%s: rel_err %.3e > %.0e", tag, e_rel, tol);
    if (g_tool && precision == MOE_CKPT_AUTO) {
      double e_tool = tool_run(l, x, M, K, ref);
      printf("  %s: examples/moe_checkpoint: rel_err %.3e\n", tag, e_tool);
      CHECK(e_tool <= tol, "%s: moe_checkpoint --x: rel_err %.3e > %.0e", tag, e_tool, tol);
    }
  }
  free(buf), free(sbuf), free(ws), free(x), free(out), free(logits), free(lw), free(wts), free(lids), free(ids);
  free(ref), free(mylog);
  moe_ckpt_layer_free(&CL);
}

/* config checks shared by every case */
static void check_config(const model *m, const moe_ckpt *ck) {
  const moe_ckpt_config *c = moe_ckpt_config_of(ck);
  CHECK(c != NULL, "%s: no config", m->name);
  if (!c) return;
  CHECK(c->arch == m->arch, "%s: arch %s", m->name, moe_ckpt_arch_name(c->arch));
  CHECK(c->hidden == m->K && c->n_layers == m->n_layers && c->n_experts == m->E && c->topk == m->topk &&
            c->moe_inter == m->N && c->shared_inter == m->Nsh,
        "%s: config hidden %lld layers %lld experts %lld topk %lld moe_inter %lld shared_inter %lld", m->name,
        (long long)c->hidden, (long long)c->n_layers, (long long)c->n_experts, (long long)c->topk,
        (long long)c->moe_inter, (long long)c->shared_inter);
  CHECK(c->first_dense == m->first_dense, "%s: first_dense %lld", m->name, (long long)c->first_dense);
  if (m->arch != MOE_CKPT_GPT_OSS) CHECK(c->norm_topk_prob == m->norm, "%s: norm_topk_prob %d", m->name, c->norm_topk_prob);
  if (m->arch == MOE_CKPT_QWEN2_MOE) CHECK(c->shared_gated == 1, "%s: shared_gated %d", m->name, c->shared_gated);
  if (m->arch == MOE_CKPT_DEEPSEEK_V3)
    CHECK(c->sigmoid == 1 && c->n_group == m->n_group && c->topk_group == m->topk_group &&
              fabsf(c->routed_scaling_factor - (float)m->rsf) < 1e-6f,
          "%s: sigmoid %d groups %d/%d rsf %g", m->name, c->sigmoid, c->n_group, c->topk_group, c->routed_scaling_factor);
  if (!m->gguf) {
    moe_ckpt_quant q = m->fmt == F_FP8 ? MOE_CKPT_QUANT_FP8 : m->fmt == F_AWQ ? MOE_CKPT_QUANT_AWQ
                       : m->fmt == F_GPTQ ? MOE_CKPT_QUANT_GPTQ : m->fmt == F_MXFP4 ? MOE_CKPT_QUANT_MXFP4
                                                                    : MOE_CKPT_QUANT_NONE;
    CHECK(c->quant == q, "%s: quant %d, want %d", m->name, (int)c->quant, (int)q);
    if (m->fmt == F_FP8) CHECK(c->block_n == 128 && c->block_k == 128, "%s: fp8 blocks %dx%d", m->name, c->block_n, c->block_k);
    if (m->fmt == F_AWQ || m->fmt == F_GPTQ)
      CHECK(c->bits == 4 && c->group == m->group && c->desc_act == 0 && c->gptq_v2 == m->gptq_v2,
            "%s: bits %d group %d desc_act %d v2 %d",
            m->name, c->bits, c->group, c->desc_act, c->gptq_v2);
  }
  if (m->arch == MOE_CKPT_GPT_OSS)
    CHECK(fabsf(c->swiglu_limit - 7.0f) < 1e-6f, "%s: swiglu_limit %g", m->name, c->swiglu_limit);
}

/* A layer that cannot be loaded: status and message. */
static void expect_layer_fail(const char *what, moe_ckpt *ck, int64_t layer, moe_status want, const char *in_msg) {
  moe_ckpt_layer CL;
  moe_ckpt_error err;
  moe_status st;
  memset(&CL, 0, sizeof CL);
  memset(&err, 0, sizeof err);
  st = moe_ckpt_load_layer(ck, layer, MOE_CKPT_AUTO, &CL, &err);
  CHECK(st != MOE_OK && (want == MOE_OK || st == want), "%s: layer %lld: got %s, want %s (%s)", what, (long long)layer,
        moe_status_str(st), want == MOE_OK ? "an error" : moe_status_str(want), err.msg);
  if (st != MOE_OK && in_msg) CHECK(strstr(err.msg, in_msg) != NULL, "%s: err.msg \"%s\" does not name %s", what, err.msg, in_msg);
  if (st == MOE_OK) moe_ckpt_layer_free(&CL);
  else printf("%s: layer %lld: %s: %s\n", what, (long long)layer, moe_status_str(st), err.msg);
  { /* on three threads: the same status and message (the lowest failing expert's) */
    const moe_parallel par = {tri_parallel_for, NULL, 3};
    moe_ckpt_error perr;
    memset(&perr, 0, sizeof perr);
    moe_status pst = moe_ckpt_load_layer_parallel(ck, layer, MOE_CKPT_AUTO, &CL, &perr, &par);
    CHECK(pst == st && (st == MOE_OK || strcmp(perr.msg, err.msg) == 0), "%s: on three threads %s (%s), serially %s (%s)", what,
          moe_status_str(pst), perr.msg, moe_status_str(st), err.msg);
    if (pst == MOE_OK) moe_ckpt_layer_free(&CL);
    memset(&perr, 0, sizeof perr);
    { /* and straight into packed experts */
      moe_experts px, ps;
      pst = moe_ckpt_load_layer_packed(ck, layer, MOE_CKPT_AUTO, &CL, &px, &ps, &perr, &par);
      CHECK(pst == st && (st == MOE_OK || strcmp(perr.msg, err.msg) == 0), "%s: packed on three threads %s (%s), serially %s (%s)",
            what, moe_status_str(pst), perr.msg, moe_status_str(st), err.msg);
      if (pst == MOE_OK) moe_ckpt_layer_free(&CL);
    }
  }
}

/* writes the model, opens it (dir, or file when open_file is set) and runs every MoE layer */
static void run_model(model *m, int n_shards, const char *open_file, uint32_t gguf_version, uint32_t alignment,
                      int extra_prec) {
  cw_dir d;
  char path[768];
  moe_ckpt *ck = NULL;
  moe_ckpt_error err;
  moe_status st;
  gen_model(m);
  if (cw_dir_make(&d, "t") != 0) {
    CHECK(0, "%s: mkdtemp failed", m->name);
    free_model(m);
    return;
  }
  if (m->gguf) {
    cw_gguf g;
    build_gguf(m, &g, gguf_version, alignment);
    CHECK(cw_gguf_write(&g, &d, "model.gguf") == 0, "%s: writing the gguf", m->name);
    cw_gguf_free(&g);
    cw_dir_file(&d, "model.gguf", path, sizeof path);
  } else {
    cw_st s = {0, 0, 0};
    cw_json *cfg = build_config(m, 0);
    build_hf(m, &s, n_shards > 1 ? 1 : 0, n_shards > 1 ? (int)(m->E / 2) : 0, 0);
    CHECK(cw_st_write(&s, &d, n_shards) == 0 && cw_write_config(&d, cfg) == 0, "%s: writing the checkpoint", m->name);
    cw_st_free(&s);
    cw_json_free(cfg);
    if (open_file) cw_dir_file(&d, open_file, path, sizeof path);
    else snprintf(path, sizeof path, "%s", d.path);
  }
  snprintf(g_ckpt, sizeof g_ckpt, "%s", path), snprintf(g_dir, sizeof g_dir, "%s", d.path);
  memset(&err, 0, sizeof err);
  st = moe_ckpt_open(path, &ck, &err);
  CHECK(st == MOE_OK, "%s: moe_ckpt_open(%s): %s (%s)", m->name, path, moe_status_str(st), err.msg);
  if (st == MOE_OK) {
    check_config(m, ck);
    for (int l = 0; l < m->n_layers; l++)
      if (m->L[l].moe) run_layer(m, ck, l, MOE_CKPT_AUTO);
    if (extra_prec != MOE_CKPT_AUTO) run_layer(m, ck, (int)m->n_layers - 1, extra_prec);
    /* layers that are not MoE layers */
    expect_layer_fail(m->name, ck, m->n_layers, MOE_ERR_EXPERT_ID, NULL);
    expect_layer_fail(m->name, ck, -1, MOE_OK, NULL);
    if (m->first_dense) expect_layer_fail(m->name, ck, 0, MOE_ERR_EXPERT_ID, NULL);
    moe_ckpt_close(ck);
    if (g_tool) CHECK(tool_all_layers() == 0, "%s: moe_checkpoint --all-layers (packing, then from the packed file)", m->name);
  }
  cw_dir_remove(&d);
  free_model(m);
}

static model base_model(const char *name, moe_ckpt_arch arch, int fmt, int gguf, int64_t E, int64_t N, int64_t K,
                        int64_t layers, uint64_t seed) {
  model m;
  memset(&m, 0, sizeof m);
  m.name = name, m.arch = arch, m.fmt = fmt, m.gguf = gguf, m.E = E, m.N = N, m.K = K, m.n_layers = layers;
  m.topk = 2, m.n_group = 1, m.topk_group = 1, m.rsf = 1.0, m.seed = seed, m.group = 32;
  m.norm = arch != MOE_CKPT_QWEN2_MOE;
  m.rd = gguf ? RD_F32 : (fmt == F_F16 || fmt == F_AWQ || fmt == F_GPTQ) ? RD_F16 : RD_BF16;
  return m;
}
static model deepseek_model(const char *name, int fmt, int gguf, int64_t N, int64_t K, uint64_t seed) {
  model m = base_model(name, MOE_CKPT_DEEPSEEK_V3, fmt, gguf, 8, N, K, 3, seed);
  m.n_group = 4, m.topk_group = 2, m.rsf = 2.5, m.Nsh = N, m.first_dense = 1;
  m.Ndense = 128; /* fp8: gate and up each start on a 128-row block */
  return m;
}

/* ==== bad input ========================================================================================= */
/* Every prefix of a file (exact-size copies, so a sanitizer sees any read past them) must fail to
 * parse; strict_end: prefixes shorter than this must fail (GGUF: the tail after the last tensor's
 * data is padding, so cutting it leaves a valid file). */
static void truncations(const char *what, const uint8_t *file, size_t size, size_t strict_end, int gguf) {
  int64_t bad = 0, tried = 0;
  moe_ckpt_error err;
  moe_status st;
  {
    moe_ckpt_tensors t;
    moe_ckpt_config cfg;
    memset(&t, 0, sizeof t);
    memset(&err, 0, sizeof err);
    st = gguf ? moe_ckpt_parse_gguf(file, size, &t, &cfg, &err) : moe_ckpt_parse_safetensors(file, size, &t, &err);
    CHECK(st == MOE_OK, "%s: the whole file does not parse: %s (%s)", what, moe_status_str(st), err.msg);
    if (st == MOE_OK) moe_ckpt_tensors_free(&t);
  }
  for (size_t n = 0; n < strict_end; n += (n < 4096 || strict_end - n < 256) ? 1 : 97) {
    uint8_t *p = (uint8_t *)test_malloc(n);
    moe_ckpt_tensors t;
    moe_ckpt_config cfg;
    memcpy(p, file, n);
    memset(&t, 0, sizeof t);
    memset(&err, 0, sizeof err);
    st = gguf ? moe_ckpt_parse_gguf(p, n, &t, &cfg, &err) : moe_ckpt_parse_safetensors(p, n, &t, &err);
    if (st == MOE_OK) {
      if (bad < 5) fprintf(stderr, "  %s: a prefix of %zu of %zu bytes parsed\n", what, n, size);
      bad++;
      moe_ckpt_tensors_free(&t);
    }
    tried++;
    free(p);
  }
  printf("%s: %lld truncations tried, %lld accepted\n", what, (long long)tried, (long long)bad);
  CHECK(bad == 0, "%s: %lld truncated copies parsed as valid", what, (long long)bad);
}

/* opens a truncated copy on disk: a status at open or at load, never a crash */
static void truncated_open(const char *what, cw_dir *d, const char *name, const uint8_t *file, size_t n, int is_dir) {
  char path[768];
  moe_ckpt *ck = NULL;
  moe_ckpt_error err;
  moe_status st;
  CHECK(cw_dir_write(d, name, file, n) == 0, "%s: writing the truncated file", what);
  memset(&err, 0, sizeof err);
  st = moe_ckpt_open(is_dir ? d->path : cw_dir_file(d, name, path, sizeof path), &ck, &err);
  if (st == MOE_OK) { /* the reader may check tensors when a layer is loaded */
    moe_ckpt_layer CL;
    int64_t nl = moe_ckpt_config_of(ck)->n_layers;
    int any_fail = 0;
    for (int64_t l = 0; l < nl; l++) {
      memset(&CL, 0, sizeof CL);
      st = moe_ckpt_load_layer(ck, l, MOE_CKPT_AUTO, &CL, &err);
      if (st == MOE_OK) moe_ckpt_layer_free(&CL);
      else any_fail = 1;
    }
    moe_ckpt_close(ck);
    CHECK(any_fail, "%s: a file truncated to %zu bytes opened and every layer loaded", what, n);
  } else
    printf("%s: truncated to %zu bytes: %s: %s\n", what, n, moe_status_str(st), err.msg);
}

static void test_bad_files(void) {
  cw_dir d;
  if (cw_dir_make(&d, "bad") != 0) {
    CHECK(0, "mkdtemp failed");
    return;
  }
  { /* safetensors: a small Mixtral file */
    model m = base_model("bad-mixtral", MOE_CKPT_MIXTRAL, F_BF16, 0, 4, 32, 64, 2, 61);
    cw_st s = {0, 0, 0};
    cw_buf b = {0, 0, 0};
    cw_json *cfg;
    size_t hdr;
    gen_model(&m);
    build_hf(&m, &s, 0, 0, 0);
    cw_st_serialize(&s, 0, &b);
    hdr = 8 + (size_t)(b.p[0] | b.p[1] << 8 | b.p[2] << 16);
    truncations("safetensors truncations", b.p, b.n, b.n, 0);
    cfg = build_config(&m, 0);
    CHECK(cw_write_config(&d, cfg) == 0, "writing config.json");
    cw_json_free(cfg);
    truncated_open("safetensors cut in the header", &d, "model.safetensors", b.p, hdr / 2, 1);
    truncated_open("safetensors cut after the header", &d, "model.safetensors", b.p, hdr, 1);
    truncated_open("safetensors cut in the data", &d, "model.safetensors", b.p, hdr + (b.n - hdr) / 2, 1);
    truncated_open("safetensors one byte short", &d, "model.safetensors", b.p, b.n - 1, 1);
    /* a missing tensor is named */
    {
      const char *gone = "model.layers.1.block_sparse_moe.experts.2.w3.weight";
      moe_ckpt *ck = NULL;
      moe_ckpt_error err;
      moe_status st;
      CHECK(cw_st_remove(&s, gone), "test data: %s not written", gone);
      b.n = 0;
      cw_st_serialize(&s, 0, &b);
      CHECK(cw_dir_write_buf(&d, "model.safetensors", &b) == 0, "writing model.safetensors");
      memset(&err, 0, sizeof err);
      st = moe_ckpt_open(d.path, &ck, &err);
      if (st != MOE_OK)
        CHECK(strstr(err.msg, gone) != NULL, "missing tensor: open failed (%s) without naming %s: %s", moe_status_str(st),
              gone, err.msg);
      else {
        moe_ckpt_layer CL;
        memset(&CL, 0, sizeof CL);
        st = moe_ckpt_load_layer(ck, 0, MOE_CKPT_AUTO, &CL, &err);
        CHECK(st == MOE_OK, "missing tensor of layer 1: layer 0 does not load: %s (%s)", moe_status_str(st), err.msg);
        if (st == MOE_OK) moe_ckpt_layer_free(&CL);
        expect_layer_fail("safetensors missing tensor", ck, 1, MOE_OK, gone);
        moe_ckpt_close(ck);
      }
    }
    cw_buf_free(&b);
    cw_st_free(&s);
    free_model(&m);
  }
  { /* GGUF: a small qwen3moe Q4_0 file */
    model m = base_model("bad-qwen3moe", MOE_CKPT_QWEN3_MOE, F_Q4_0, 1, 4, 32, 64, 2, 62);
    cw_gguf g;
    cw_buf b = {0, 0, 0};
    size_t data_end;
    gen_model(&m);
    build_gguf(&m, &g, 3, 0);
    cw_gguf_serialize(&g, &b);
    data_end = b.n - (cw_pad_to(g.t[g.n - 1].bytes, g.alignment) - g.t[g.n - 1].bytes); /* the last tensor's end */
    truncations("gguf truncations", b.p, b.n, data_end, 1);
    truncated_open("gguf cut in the metadata", &d, "t.gguf", b.p, 100, 0);
    truncated_open("gguf cut in the tensor infos", &d, "t.gguf", b.p, 24 + g.kv.n + 40, 0);
    truncated_open("gguf cut in the data", &d, "t.gguf", b.p, b.n / 2, 0);
    truncated_open("gguf one byte short of the last tensor", &d, "t.gguf", b.p, data_end - 1, 0);
    cw_dir_unlink(&d, "t.gguf");
    { /* a missing tensor is named */
      const char *gone = "blk.1.ffn_down_exps.weight";
      moe_ckpt *ck = NULL;
      moe_ckpt_error err;
      moe_status st;
      char path[768];
      CHECK(cw_gguf_remove(&g, gone), "test data: %s not written", gone);
      CHECK(cw_gguf_write(&g, &d, "missing.gguf") == 0, "writing missing.gguf");
      memset(&err, 0, sizeof err);
      st = moe_ckpt_open(cw_dir_file(&d, "missing.gguf", path, sizeof path), &ck, &err);
      if (st != MOE_OK)
        CHECK(strstr(err.msg, gone) != NULL, "gguf missing tensor: open failed (%s) without naming %s: %s",
              moe_status_str(st), gone, err.msg);
      else {
        expect_layer_fail("gguf missing tensor", ck, 1, MOE_OK, gone);
        moe_ckpt_close(ck);
      }
    }
    cw_buf_free(&b);
    cw_gguf_free(&g);
    free_model(&m);
  }
  { /* GPTQ act-order: desc_act with a permuted g_idx */
    model m = base_model("qwen3_moe gptq desc_act", MOE_CKPT_QWEN3_MOE, F_GPTQ, 0, 4, 32, 64, 2, 63);
    cw_st s = {0, 0, 0};
    cw_json *cfg;
    moe_ckpt *ck = NULL;
    moe_ckpt_error err;
    moe_status st;
    gen_model(&m);
    build_hf(&m, &s, 0, 0, 1);
    cfg = build_config(&m, 1);
    CHECK(cw_st_write(&s, &d, 1) == 0 && cw_write_config(&d, cfg) == 0, "writing the act-order checkpoint");
    memset(&err, 0, sizeof err);
    st = moe_ckpt_open(d.path, &ck, &err);
    if (st != MOE_OK)
      CHECK(st == MOE_ERR_UNSUPPORTED, "gptq act-order: open: %s, want %s (%s)", moe_status_str(st),
            moe_status_str(MOE_ERR_UNSUPPORTED), err.msg);
    else {
      expect_layer_fail("gptq act-order", ck, 1, MOE_ERR_UNSUPPORTED, NULL);
      moe_ckpt_close(ck);
    }
    cw_json_free(cfg);
    cw_st_free(&s);
    free_model(&m);
  }
  cw_dir_remove(&d);
}

int main(int argc, char **argv) {
  g_tool = argc > 1 ? argv[1] : NULL;
  { /* Hugging Face safetensors */
    model m;
    m = base_model("mixtral bf16", MOE_CKPT_MIXTRAL, F_BF16, 0, 4, 48, 64, 2, 1);
    run_model(&m, 1, "model.safetensors", 0, 0, MOE_CKPT_AUTO); /* opened by the file's path */
    m = base_model("qwen2_moe bf16 shared", MOE_CKPT_QWEN2_MOE, F_BF16, 0, 6, 32, 64, 2, 2);
    m.Nsh = 96;
    run_model(&m, 1, NULL, 0, 0, MOE_CKPT_AUTO);
    m = base_model("qwen3_moe bf16 2 shards", MOE_CKPT_QWEN3_MOE, F_BF16, 0, 8, 64, 96, 3, 3);
    run_model(&m, 2, NULL, 0, 0, MOE_CKPT_AUTO);
    m = base_model("qwen3_moe f16", MOE_CKPT_QWEN3_MOE, F_F16, 0, 4, 32, 64, 2, 4);
    run_model(&m, 1, NULL, 0, 0, MOE_CKPT_AUTO);
    m = deepseek_model("deepseek_v3 fp8", F_FP8, 0, 128, 160, 5); /* K 160: a partial 128-column block */
    run_model(&m, 1, NULL, 0, 0, MOE_CKPT_AUTO);
    m = deepseek_model("deepseek_v3 fp8 N 192", F_FP8, 0, 192, 160, 15); /* gate and up each own a partial block */
    run_model(&m, 1, NULL, 0, 0, MOE_CKPT_AUTO);
    m = base_model("gpt_oss mxfp4", MOE_CKPT_GPT_OSS, F_MXFP4, 0, 4, 64, 64, 2, 6);
    m.bias = 1;
    run_model(&m, 1, NULL, 0, 0, MOE_CKPT_AUTO);
    m = base_model("qwen3_moe awq", MOE_CKPT_QWEN3_MOE, F_AWQ, 0, 4, 64, 128, 2, 7);
    m.group = 64;
    run_model(&m, 1, NULL, 0, 0, MOE_CKPT_AUTO);
    m = base_model("qwen3_moe gptq", MOE_CKPT_QWEN3_MOE, F_GPTQ, 0, 4, 64, 96, 2, 8);
    m.group = 32;
    run_model(&m, 1, NULL, 0, 0, MOE_PREC_INT4_W4A8); /* and once as int4-w4a8 */
    m = base_model("qwen3_moe gptq_v2", MOE_CKPT_QWEN3_MOE, F_GPTQ, 0, 4, 32, 64, 2, 9);
    m.gptq_v2 = 1; /* zero points 0..15 stored as they are */
    run_model(&m, 1, NULL, 0, 0, MOE_CKPT_AUTO);
  }
  { /* GGUF */
    model m;
    m = base_model("gguf qwen3moe bf16", MOE_CKPT_QWEN3_MOE, F_BF16, 1, 4, 32, 64, 2, 11);
    run_model(&m, 0, NULL, 3, 0, MOE_CKPT_AUTO);
    m = base_model("gguf v2 qwen3moe f16", MOE_CKPT_QWEN3_MOE, F_F16, 1, 4, 32, 64, 2, 12);
    run_model(&m, 0, NULL, 2, 0, MOE_CKPT_AUTO);
    m = base_model("gguf qwen3moe q4_0 align 64", MOE_CKPT_QWEN3_MOE, F_Q4_0, 1, 4, 64, 96, 2, 13);
    run_model(&m, 0, NULL, 3, 64, MOE_CKPT_AUTO);
    m = base_model("gguf gpt-oss mxfp4", MOE_CKPT_GPT_OSS, F_MXFP4, 1, 4, 64, 64, 2, 14);
    m.bias = 1;
    run_model(&m, 0, NULL, 3, 0, MOE_CKPT_AUTO);
    m = base_model("gguf qwen2moe q8_0", MOE_CKPT_QWEN2_MOE, F_Q8_0, 1, 4, 32, 64, 2, 15);
    m.Nsh = 64;
    run_model(&m, 0, NULL, 3, 32, MOE_CKPT_AUTO);
    m = deepseek_model("gguf deepseek2 bf16", F_BF16, 1, 32, 64, 16);
    run_model(&m, 0, NULL, 3, 0, MOE_CKPT_AUTO);
  }
  test_bad_files();
  return test_finish("test_checkpoint");
}
