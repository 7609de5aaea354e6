/* moe_demo — one MoE layer of a real model, end to end, in every compiled precision.
 *
 * Random weights ~N(0,1)/sqrt(fan_in) are generated once per matrix (in f32, expert by expert) and
 * quantized by the library's quantizers into each precision's plain layout; random router logits
 * with a per-expert popularity skew are routed by moe_route(); the fused layer then runs in each
 * precision. The table shows the error against a float64 oracle that uses the ORIGINAL f32 weights
 * (so it is each precision's total quantization + compute error) and the speed.
 *
 *   moe_demo [--model NAME] [--m M] [--precision LIST] [--threads T] [--experts E] [--n N]
 *            [--runs R] [--seed S] [--isa scalar|avx512|amx] [--all-experts]
 *
 * Experts that no token routes to are never read by the layer, so by default the demo leaves their
 * weights zero instead of generating and quantizing them (the library's scalar quantizers would
 * otherwise dominate the run time); --all-experts fills every expert.
 *
 * Exit status: 0 on success, 1 when a library call fails or an error is NaN, 2 on bad options.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#define MOE_IMPLEMENTATION
#include "moe.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define ORACLE_TOKENS 4 /* the float64 oracle checks the first min(M, 4) tokens */
#define BLOCK 128       /* fp8 scale block (rows and cols) and int4 group */

/* ---- models (REFERENCE.md) ---------------------------------------------------------------------- */
typedef struct model_spec {
  const char *name;
  int64_t K, N, E;
  int32_t topk;
  moe_route_kind route;
  int32_t n_group, topk_group, renormalize;
  float rsf;            /* routed scaling factor, folded into the routing weights (0: 1)        */
  moe_activation act;
  int biases;           /* random b13 and b2 (gpt-oss)                                          */
  int interleaved;      /* the checkpoint stores gate/up interleaved (gpt-oss)                 */
  int64_t shared_N;     /* intermediate size of the shared expert; 0: none                      */
  int shared_gate;      /* shared output scaled by sigmoid(x . gate) (Qwen1.5-MoE)              */
  int64_t cut_E, cut_N; /* default cuts that keep the demo's memory modest; 0: full size        */
} model_spec;

static const model_spec MODELS[] = {
    {.name = "qwen3-30b-a3b", .K = 2048, .N = 768, .E = 128, .topk = 8, .route = MOE_ROUTE_SOFTMAX,
     .renormalize = 1},
    {.name = "mixtral-8x7b", .K = 4096, .N = 14336, .E = 8, .topk = 2, .route = MOE_ROUTE_SOFTMAX,
     .renormalize = 1, .cut_N = 3584},
    {.name = "deepseek-v3", .K = 7168, .N = 2048, .E = 256, .topk = 8, .route = MOE_ROUTE_BIASED_GROUPED,
     .n_group = 8, .topk_group = 4, .renormalize = 1, .rsf = 2.5f, .shared_N = 2048, .cut_E = 16},
    {.name = "qwen1.5-moe-a2.7b", .K = 2048, .N = 1408, .E = 60, .topk = 4, .route = MOE_ROUTE_SOFTMAX,
     .shared_N = 5632, .shared_gate = 1},
    {.name = "gpt-oss-20b", .K = 2880, .N = 2880, .E = 32, .topk = 4, .route = MOE_ROUTE_SOFTMAX,
     .renormalize = 1, .act = MOE_ACT_SWIGLU_OAI, .biases = 1, .interleaved = 1},
    {.name = "llama-4-scout", .K = 5120, .N = 8192, .E = 16, .topk = 1, .route = MOE_ROUTE_SIGMOID,
     .shared_N = 8192, .cut_E = 4},
};
#define N_MODELS (sizeof MODELS / sizeof MODELS[0])

/* ---- small utilities ---------------------------------------------------------------------------- */
static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "moe_demo: out of memory (%zu bytes); try --experts or --n\n", n);
    exit(1);
  }
  return p;
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "moe_demo: out of memory; try --experts or --n\n");
    exit(1);
  }
  return p;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* splitmix64: derives independent stream seeds from (seed, tag, index). */
static uint64_t mix_seed(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* xorshift64* */
static uint64_t rng_next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1Dull;
}

/* Approximately N(0, 1), cheap: the sum of four 16-bit uniforms (Irwin-Hall), centred and scaled to
 * unit variance. One RNG step per value, no log or cos: weight generation must not dominate. */
static float rng_normal(uint64_t *s) {
  uint64_t r = rng_next(s);
  int64_t sum = (int64_t)(r & 0xFFFF) + (int64_t)((r >> 16) & 0xFFFF) + (int64_t)((r >> 32) & 0xFFFF) +
                (int64_t)(r >> 48);
  return (float)(sum - 131070) * (float)(1.7320508075688772 / 65536.0); /* sd = 65536 / sqrt(3) */
}

static void fill_normal(float *v, int64_t n, float scale, uint64_t *s) {
  for (int64_t i = 0; i < n; i++) v[i] = scale * rng_normal(s);
}

/* ---- plain weight formats ----------------------------------------------------------------------- */
typedef enum wfmt { FMT_BF16, FMT_FP16, FMT_INT8, FMT_FP8, FMT_INT4, FMT_MXFP4, FMT_COUNT } wfmt;

/* The plain format a precision packs from (both INT4 precisions share one). */
static wfmt fmt_of(moe_precision p) {
  static const wfmt f[MOE_PREC_COUNT] = {FMT_BF16, FMT_FP16, FMT_INT8,  FMT_FP8,
                                         FMT_INT4, FMT_INT4, FMT_MXFP4};
  return f[p];
}

/* Per-expert element counts of one rows x cols matrix in a plain format. */
typedef struct mat_sizes {
  size_t q_bytes, n_scale, n_zero, n_e8m0;
} mat_sizes;

static mat_sizes mat_sizes_of(wfmt f, int64_t rows, int64_t cols) {
  mat_sizes s = {0, 0, 0, 0};
  size_t n8 = (size_t)(rows * cols), n4 = (size_t)(rows * cdiv(cols, 2)); /* 8-bit, 4-bit codes */
  switch (f) {
  case FMT_BF16:
  case FMT_FP16: s.q_bytes = 2 * n8; break;
  case FMT_INT8: s.q_bytes = n8, s.n_scale = (size_t)rows; break;
  case FMT_FP8: s.q_bytes = n8, s.n_scale = (size_t)(cdiv(rows, BLOCK) * cdiv(cols, BLOCK)); break;
  case FMT_INT4: s.q_bytes = n4, s.n_scale = s.n_zero = (size_t)(rows * cdiv(cols, BLOCK)); break;
  case FMT_MXFP4: s.q_bytes = n4, s.n_e8m0 = (size_t)(rows * cdiv(cols, 32)); break;
  default: break;
  }
  return s;
}

/* One matrix of E experts in one plain format: [E, rows, cols] codes plus their scales. */
typedef struct plain_mat {
  uint8_t *q, *zero, *e8m0;
  float *scale;
  mat_sizes per; /* per expert */
} plain_mat;

static void mat_alloc(plain_mat *m, wfmt f, int64_t E, int64_t rows, int64_t cols) {
  size_t e = (size_t)E;
  m->per = mat_sizes_of(f, rows, cols);
  /* zeroed: the experts the demo skips stay valid all-zero weights in every format */
  m->q = (uint8_t *)xcalloc(e, m->per.q_bytes);
  m->scale = m->per.n_scale ? (float *)xcalloc(e * m->per.n_scale, sizeof(float)) : NULL;
  m->zero = m->per.n_zero ? (uint8_t *)xcalloc(e, m->per.n_zero) : NULL;
  m->e8m0 = m->per.n_e8m0 ? (uint8_t *)xcalloc(e, m->per.n_e8m0) : NULL;
}

static void mat_free(plain_mat *m) {
  free(m->q), free(m->scale), free(m->zero), free(m->e8m0);
  memset(m, 0, sizeof *m);
}

/* Quantizes expert e's f32 matrix w [rows, cols] into slot e of m with the library's quantizers. */
static void mat_quantize(plain_mat *m, wfmt f, int64_t e, const float *w, int64_t rows, int64_t cols) {
  uint8_t *q = m->q + (size_t)e * m->per.q_bytes;
  float *scale = m->scale ? m->scale + (size_t)e * m->per.n_scale : NULL;
  uint8_t *zero = m->zero ? m->zero + (size_t)e * m->per.n_zero : NULL;
  uint8_t *e8m0 = m->e8m0 ? m->e8m0 + (size_t)e * m->per.n_e8m0 : NULL;
  int64_t n = rows * cols;
  switch (f) {
  case FMT_BF16:
    for (int64_t i = 0; i < n; i++) ((uint16_t *)q)[i] = moe_f32_to_bf16(w[i]);
    break;
  case FMT_FP16:
    for (int64_t i = 0; i < n; i++) ((uint16_t *)q)[i] = moe_f32_to_f16(w[i]);
    break;
  case FMT_INT8: moe_quantize_weight_int8(w, 1, rows, cols, (int8_t *)q, scale); break;
  case FMT_FP8: moe_quantize_weight_fp8(w, 1, rows, cols, BLOCK, BLOCK, q, scale); break;
  case FMT_INT4: moe_quantize_weight_int4(w, 1, rows, cols, BLOCK, q, scale, zero); break;
  case FMT_MXFP4: moe_quantize_weight_mxfp4(w, 1, rows, cols, q, e8m0); break;
  default: break;
  }
}

/* E experts of one shape (the routed experts, or the shared expert with E = 1). */
typedef struct stack {
  int64_t E, N, K;
  plain_mat w13[FMT_COUNT], w2[FMT_COUNT]; /* only the formats some chosen precision needs */
  float *b13, *b2;                         /* plain f32 biases [E, 2N], [E, K], or NULL      */
} stack;

/* One expert's original f32 weights. Gate row n starts at gate + n * row_step (bias bg[n * bias_step]),
 * up row n at up + n * row_step: one view for the plain and the gate/up-interleaved layout. */
typedef struct expert_f32 {
  float *w13, *w2, *b13, *b2;   /* as generated: [2N, K] (maybe interleaved), [K, N], [2N], [K] */
  float *plain13, *plain_b13;   /* gate rows first (a deinterleaved copy, or w13/b13 itself)    */
  const float *gate, *up, *bg, *bu;
  int64_t row_step, bias_step;
} expert_f32;

/* ---- the demo's state --------------------------------------------------------------------------- */
typedef struct options {
  const model_spec *model;
  int64_t M, E, N; /* E, N: 0 means the model's default (with its cut) */
  int64_t threads, runs;
  uint64_t seed;
  int all_experts; /* generate the experts no token uses too */
  int use[MOE_PREC_COUNT];
  moe_isa isa_cap; /* highest kernel tier allowed */
} options;

typedef struct demo {
  const model_spec *spec;
  int64_t M, K, E, Mo; /* Mo: tokens the oracle checks */
  int32_t topk, T;     /* T: slots per token in the oracle (topk, + 1 with a shared expert) */
  int threads, runs, all_experts;
  uint64_t seed;
  int use[MOE_PREC_COUNT];
  uint16_t *x;           /* [M, K] bf16 activations                                   */
  float *xf;             /* x as f32 (exact)                                          */
  float *logits;         /* [M, E] router logits                                      */
  float *corr_bias;      /* [E] DeepSeek-V3 correction bias, or NULL                  */
  float *gate_vec;       /* [K] Qwen1.5-MoE shared-expert gate, or NULL               */
  float *tw;             /* [M, topk] routing weights                                 */
  int32_t *ids;          /* [M, topk] routed experts                                  */
  char *hit;             /* [E] nonzero for the experts some token routes to          */
  int64_t n_hit;         /* distinct experts the M tokens hit                         */
  double *shared_scale;  /* [Mo] sigmoid(x . gate), or 1                              */
  double *slot_y;        /* [Mo, T, K] oracle: each slot's weighted expert output     */
  double *ref;           /* [Mo, K] oracle output                                     */
  stack routed, shared;  /* shared.E == 0: no shared expert                           */
} demo;

/* ---- options ------------------------------------------------------------------------------------ */
static void usage(FILE *f) {
  fprintf(f,
          "usage: moe_demo [--model NAME] [--m M] [--precision LIST] [--threads T] [--experts E]\n"
          "                [--n N] [--runs R] [--seed S] [--isa TIER] [--all-experts]\n"
          "  --model      qwen3-30b-a3b (default), mixtral-8x7b, deepseek-v3, qwen1.5-moe-a2.7b,\n"
          "               gpt-oss-20b, llama-4-scout\n"
          "  --m          tokens (default 8)\n"
          "  --precision  comma-separated list or 'all' (default: every compiled precision)\n"
          "  --threads    threads (default: OpenMP's default, all cores)\n"
          "  --experts    routed experts kept (default: all; 16 for deepseek-v3, 4 for llama-4-scout)\n"
          "  --n          expert intermediate size (default: the model's; 3584 for mixtral-8x7b)\n"
          "  --runs       timed runs, median reported (default 5)\n"
          "  --seed       random seed (default 1)\n"
          "  --isa        highest kernel tier: scalar, avx512, amx (default: the best this CPU has)\n"
          "  --all-experts  generate the experts no token routes to as well (default: left zero)\n");
}

static int parse_int(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *v) {
  char *end;
  long long x = s ? strtoll(s, &end, 10) : 0;
  if (!s || *s == '\0' || *end != '\0' || x < lo || x > hi) {
    fprintf(stderr, "moe_demo: %s needs an integer in [%lld, %lld]\n", opt, (long long)lo, (long long)hi);
    return -1;
  }
  *v = x;
  return 0;
}

static const model_spec *find_model(const char *name) {
  for (size_t i = 0; name && i < N_MODELS; i++)
    if (strcmp(MODELS[i].name, name) == 0) return &MODELS[i];
  fprintf(stderr, "moe_demo: unknown model '%s'\n", name ? name : "");
  return NULL;
}

/* "all" or a comma-separated list of precision names; each must be compiled in. */
static int parse_precisions(const char *list, int use[MOE_PREC_COUNT]) {
  char buf[256], *tok;
  int any = 0;
  if (!list || strlen(list) >= sizeof buf) {
    fprintf(stderr, "moe_demo: --precision needs a list of names\n");
    return -1;
  }
  strcpy(buf, list);
  memset(use, 0, MOE_PREC_COUNT * sizeof *use);
  for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int found = 0;
    for (int p = 0; p < MOE_PREC_COUNT; p++)
      if (strcmp(tok, "all") == 0 || strcmp(tok, moe_precision_name((moe_precision)p)) == 0) {
        found = 1;
        if (moe_precision_compiled((moe_precision)p)) use[p] = 1;
        else if (strcmp(tok, "all") != 0) {
          fprintf(stderr, "moe_demo: precision '%s' is compiled out\n", tok);
          return -1;
        }
      }
    if (!found) {
      fprintf(stderr, "moe_demo: unknown precision '%s'\n", tok);
      return -1;
    }
  }
  for (int p = 0; p < MOE_PREC_COUNT; p++) any |= use[p];
  if (!any) fprintf(stderr, "moe_demo: no compiled precision in '%s'\n", list);
  return any ? 0 : -1;
}

static int parse_isa(const char *name, moe_isa *isa) {
  for (int i = 0; name && i < MOE_ISA_COUNT; i++)
    if (strcmp(name, moe_isa_name((moe_isa)i)) == 0) {
      *isa = (moe_isa)i;
      return 0;
    }
  fprintf(stderr, "moe_demo: unknown ISA tier '%s'\n", name ? name : "");
  return -1;
}

static int parse_options(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  o->model = &MODELS[0], o->M = 8, o->runs = 5, o->seed = 1, o->isa_cap = (moe_isa)(MOE_ISA_COUNT - 1);
  parse_precisions("all", o->use);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int64_t seed = 0;
    int bad = 0;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else if (strcmp(a, "--all-experts") == 0) {
      o->all_experts = 1;
      continue; /* the only flag without a value */
    } else if (strcmp(a, "--model") == 0) bad = !(o->model = find_model(v));
    else if (strcmp(a, "--m") == 0) bad = parse_int(a, v, 1, 1 << 20, &o->M);
    else if (strcmp(a, "--precision") == 0) bad = parse_precisions(v, o->use);
    else if (strcmp(a, "--threads") == 0) bad = parse_int(a, v, 1, 4096, &o->threads);
    else if (strcmp(a, "--experts") == 0) bad = parse_int(a, v, 1, 1024, &o->E);
    else if (strcmp(a, "--n") == 0) bad = parse_int(a, v, 1, 1 << 20, &o->N);
    else if (strcmp(a, "--runs") == 0) bad = parse_int(a, v, 1, 10000, &o->runs);
    else if (strcmp(a, "--isa") == 0) bad = parse_isa(v, &o->isa_cap);
    else if (strcmp(a, "--seed") == 0) bad = parse_int(a, v, 0, INT64_MAX, &seed), o->seed = (uint64_t)seed;
    else {
      fprintf(stderr, "moe_demo: unknown option '%s'\n", a);
      bad = 1;
    }
    if (bad) {
      usage(stderr);
      return -1;
    }
    i++; /* every option takes a value */
  }
  return 0;
}

/* ---- inputs and routing ------------------------------------------------------------------------- */
/* Threads the library will use: OpenMP's (pass NULL for moe_parallel), or 1 without OpenMP. */
static int setup_threads(int64_t requested) {
#ifdef _OPENMP
  if (requested > 0) omp_set_num_threads((int)requested);
  return omp_get_max_threads();
#else
  if (requested > 1) fprintf(stderr, "moe_demo: built without OpenMP: running on 1 thread\n");
  return 1;
#endif
}

/* x ~ N(0, 1) in bf16; logits ~ N(0, 1) plus a per-expert popularity N(0, 0.7^2), so some experts are
 * hot and some cold, as in trained routers; small random correction bias and gate vector. */
static void make_inputs(demo *d) {
  uint64_t s = mix_seed(d->seed ^ 0x1D);
  float *pop = (float *)xmalloc((size_t)d->E * sizeof *pop);
  d->x = (uint16_t *)xmalloc((size_t)(d->M * d->K) * sizeof *d->x);
  d->xf = (float *)xmalloc((size_t)(d->M * d->K) * sizeof *d->xf);
  for (int64_t i = 0; i < d->M * d->K; i++) {
    d->x[i] = moe_f32_to_bf16(rng_normal(&s));
    d->xf[i] = moe_bf16_to_f32(d->x[i]);
  }
  fill_normal(pop, d->E, 0.7f, &s);
  d->logits = (float *)xmalloc((size_t)(d->M * d->E) * sizeof *d->logits);
  for (int64_t i = 0; i < d->M * d->E; i++) d->logits[i] = rng_normal(&s) + pop[i % d->E];
  free(pop);
  if (d->spec->route == MOE_ROUTE_BIASED_GROUPED) {
    d->corr_bias = (float *)xmalloc((size_t)d->E * sizeof *d->corr_bias);
    fill_normal(d->corr_bias, d->E, 0.05f, &s);
  }
  if (d->spec->shared_gate) {
    d->gate_vec = (float *)xmalloc((size_t)d->K * sizeof *d->gate_vec);
    fill_normal(d->gate_vec, d->K, 1.0f / sqrtf((float)d->K), &s);
  }
}

static moe_status route_tokens(demo *d) {
  moe_router r;
  moe_status st;
  memset(&r, 0, sizeof r);
  r.kind = d->spec->route, r.E = (int32_t)d->E, r.topk = d->topk;
  r.n_group = d->spec->n_group, r.topk_group = d->spec->topk_group;
  r.renormalize = d->spec->renormalize, r.routed_scaling_factor = d->spec->rsf;
  r.correction_bias = d->corr_bias;
  d->tw = (float *)xmalloc((size_t)(d->M * d->topk) * sizeof *d->tw);
  d->ids = (int32_t *)xmalloc((size_t)(d->M * d->topk) * sizeof *d->ids);
  st = moe_route(&r, d->logits, MOE_F32, d->M, d->tw, d->ids);
  d->hit = (char *)xcalloc((size_t)d->E, 1);
  d->n_hit = 0;
  for (int64_t i = 0; st == MOE_OK && i < d->M * d->topk; i++)
    if (!d->hit[d->ids[i]]) d->hit[d->ids[i]] = 1, d->n_hit++;
  return st;
}

/* Sizes from the model and the cuts; the inputs; the routing; the oracle's buffers. */
static int demo_init(demo *d, const options *o) {
  const model_spec *sp = o->model;
  int64_t N = o->N ? o->N : (sp->cut_N ? sp->cut_N : sp->N);
  moe_status st;
  memset(d, 0, sizeof *d);
  d->spec = sp, d->M = o->M, d->K = sp->K, d->topk = sp->topk;
  d->E = o->E ? o->E : (sp->cut_E ? sp->cut_E : sp->E);
  d->Mo = d->M < ORACLE_TOKENS ? d->M : ORACLE_TOKENS;
  d->T = d->topk + (sp->shared_N ? 1 : 0);
  d->runs = (int)o->runs, d->seed = o->seed, d->all_experts = o->all_experts;
  memcpy(d->use, o->use, sizeof d->use);
  d->threads = setup_threads(o->threads);
  moe_set_isa(o->isa_cap);
  if (d->E < d->topk || d->E > sp->E || N > sp->N) {
    fprintf(stderr, "moe_demo: %s needs topk %d <= --experts <= %lld and --n <= %lld\n", sp->name, d->topk,
            (long long)sp->E, (long long)sp->N);
    return -1;
  }
  d->routed.E = d->E, d->routed.N = N, d->routed.K = d->K;
  if (sp->shared_N) d->shared.E = 1, d->shared.N = sp->shared_N, d->shared.K = d->K;
  make_inputs(d);
  if ((st = route_tokens(d)) != MOE_OK) {
    fprintf(stderr, "moe_demo: moe_route: %s\n", moe_status_str(st));
    if (sp->n_group) /* topk must fit in the experts of the kept groups */
      fprintf(stderr, "moe_demo: %s's grouped routing needs --experts a multiple of %d, at least %d\n",
              sp->name, sp->n_group, sp->topk * sp->n_group / sp->topk_group);
    return -1;
  }
  d->slot_y = (double *)xcalloc((size_t)(d->Mo * d->T * d->K), sizeof *d->slot_y);
  d->ref = (double *)xcalloc((size_t)(d->Mo * d->K), sizeof *d->ref);
  d->shared_scale = (double *)xmalloc((size_t)d->Mo * sizeof *d->shared_scale);
  for (int64_t m = 0; m < d->Mo; m++) {
    double s = 0.0;
    for (int64_t k = 0; d->gate_vec && k < d->K; k++) s += (double)d->xf[m * d->K + k] * d->gate_vec[k];
    d->shared_scale[m] = d->gate_vec ? 1.0 / (1.0 + exp(-s)) : 1.0;
  }
  return 0;
}

/* ---- weights and the float64 oracle ------------------------------------------------------------- */
static double act_f64(moe_activation act, double g, double u) {
  if (act == MOE_ACT_SWIGLU_OAI) { /* gpt-oss, alpha 1.702, limit 7 */
    g = g < 7.0 ? g : 7.0;
    u = u < -7.0 ? -7.0 : (u > 7.0 ? 7.0 : u);
    return g / (1.0 + exp(-1.702 * g)) * (u + 1.0);
  }
  return g / (1.0 + exp(-g)) * u; /* SiLU-and-mul */
}

/* y += weight * expert(x): h = act(x Wg + bg, x Wu + bu), y = h W2^T + b2, in float64. */
static void oracle_expert(const expert_f32 *w, int64_t N, int64_t K, moe_activation act, const float *x,
                          double weight, double *h, double *y) {
  for (int64_t n = 0; n < N; n++) {
    const float *gr = w->gate + n * w->row_step, *ur = w->up + n * w->row_step;
    double g = w->bg ? w->bg[n * w->bias_step] : 0.0, u = w->bu ? w->bu[n * w->bias_step] : 0.0;
    for (int64_t k = 0; k < K; k++) g += (double)x[k] * gr[k], u += (double)x[k] * ur[k];
    h[n] = act_f64(act, g, u);
  }
  for (int64_t k = 0; k < K; k++) {
    const float *row = w->w2 + k * N;
    double s = w->b2 ? w->b2[k] : 0.0;
    for (int64_t n = 0; n < N; n++) s += h[n] * row[n];
    y[k] += weight * s;
  }
}

/* Adds expert e of the stack to the oracle slots of the checked tokens that use it. */
static void oracle_add(const demo *d, int is_shared, int64_t e, const expert_f32 *w, int64_t N) {
  double *h = (double *)xmalloc((size_t)N * sizeof *h);
  for (int64_t m = 0; m < d->Mo; m++) {
    const float *x = d->xf + m * d->K;
    double *slots = d->slot_y + m * d->T * d->K;
    if (is_shared) {
      oracle_expert(w, N, d->K, d->spec->act, x, d->shared_scale[m], h, slots + d->topk * d->K);
      continue;
    }
    for (int32_t j = 0; j < d->topk; j++)
      if (d->ids[m * d->topk + j] == e)
        oracle_expert(w, N, d->K, d->spec->act, x, d->tw[m * d->topk + j], h, slots + j * d->K);
  }
  free(h);
}

/* Generates one expert's f32 weights from its own RNG stream (independent of thread order). */
static void expert_generate(const demo *d, const stack *s, int is_shared, int64_t e, expert_f32 *w) {
  int64_t N = s->N, K = s->K, nk = 2 * N * K;
  uint64_t rng = mix_seed(d->seed ^ mix_seed((uint64_t)(is_shared ? -1 : e)));
  memset(w, 0, sizeof *w);
  w->w13 = (float *)xmalloc((size_t)nk * sizeof(float));
  w->w2 = (float *)xmalloc((size_t)(K * N) * sizeof(float));
  fill_normal(w->w13, nk, 1.0f / sqrtf((float)K), &rng);
  fill_normal(w->w2, K * N, 1.0f / sqrtf((float)N), &rng);
  if (d->spec->biases && !is_shared) {
    w->b13 = (float *)xmalloc((size_t)(2 * N) * sizeof(float));
    w->b2 = (float *)xmalloc((size_t)K * sizeof(float));
    fill_normal(w->b13, 2 * N, 0.1f, &rng);
    fill_normal(w->b2, K, 0.1f, &rng);
  }
  w->plain13 = w->w13, w->plain_b13 = w->b13;
  w->gate = w->w13, w->up = w->w13 + N * K, w->row_step = K;
  w->bg = w->b13, w->bu = w->b13 ? w->b13 + N : NULL, w->bias_step = 1;
  if (d->spec->interleaved && !is_shared) { /* as gpt-oss stores it: row 2i gate i, row 2i+1 up i */
    w->up = w->w13 + K, w->row_step = 2 * K;
    w->bu = w->b13 ? w->b13 + 1 : NULL, w->bias_step = 2;
  }
}

/* The plain layout the packer wants: gpt-oss's interleaved gate/up turned into gate rows first. */
static void expert_deinterleave(const demo *d, const stack *s, int is_shared, expert_f32 *w) {
  if (!d->spec->interleaved || is_shared) return;
  w->plain13 = (float *)xmalloc((size_t)(2 * s->N * s->K) * sizeof(float));
  moe_deinterleave_gate_up(w->w13, w->plain13, 1, s->N, (size_t)s->K * sizeof(float));
  if (w->b13) {
    w->plain_b13 = (float *)xmalloc((size_t)(2 * s->N) * sizeof(float));
    moe_deinterleave_gate_up(w->b13, w->plain_b13, 1, s->N, sizeof(float));
  }
}

static void expert_free(expert_f32 *w) {
  if (w->plain13 != w->w13) free(w->plain13);
  if (w->plain_b13 != w->b13) free(w->plain_b13);
  free(w->w13), free(w->w2), free(w->b13), free(w->b2);
}

/* Expert e: generate in f32, feed the oracle, quantize into every needed format, keep the biases. */
static void build_expert(const demo *d, stack *s, int is_shared, int64_t e) {
  expert_f32 w;
  expert_generate(d, s, is_shared, e, &w);
  expert_deinterleave(d, s, is_shared, &w);
  oracle_add(d, is_shared, e, &w, s->N);
  for (int f = 0; f < FMT_COUNT; f++) {
    if (!s->w13[f].q) continue;
    mat_quantize(&s->w13[f], (wfmt)f, e, w.plain13, 2 * s->N, s->K);
    mat_quantize(&s->w2[f], (wfmt)f, e, w.w2, s->K, s->N);
  }
  if (s->b13) memcpy(s->b13 + e * 2 * s->N, w.plain_b13, (size_t)(2 * s->N) * sizeof(float));
  if (s->b2) memcpy(s->b2 + e * s->K, w.b2, (size_t)s->K * sizeof(float));
  expert_free(&w);
}

/* The experts of a stack that the layer reads (all with --all-experts), expert by expert (in
 * parallel), so only a few f32 experts live at once. */
static void build_stack(const demo *d, stack *s, int is_shared) {
  for (int p = 0; p < MOE_PREC_COUNT; p++) {
    wfmt f = fmt_of((moe_precision)p);
    if (!d->use[p] || s->w13[f].q) continue;
    mat_alloc(&s->w13[f], f, s->E, 2 * s->N, s->K);
    mat_alloc(&s->w2[f], f, s->E, s->K, s->N);
  }
  if (d->spec->biases && !is_shared) {
    s->b13 = (float *)xcalloc((size_t)(s->E * 2 * s->N), sizeof(float));
    s->b2 = (float *)xcalloc((size_t)(s->E * s->K), sizeof(float));
  }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1)
#endif
  for (int64_t e = 0; e < s->E; e++)
    if (is_shared || d->all_experts || d->hit[e]) build_expert(d, s, is_shared, e);
}

static void stack_free_format(stack *s, wfmt f) {
  mat_free(&s->w13[f]);
  mat_free(&s->w2[f]);
}

static void stack_free(stack *s) {
  for (int f = 0; f < FMT_COUNT; f++) stack_free_format(s, (wfmt)f);
  free(s->b13), free(s->b2);
}

/* The oracle's output: each token's slots summed in a fixed order. */
static void oracle_finish(demo *d) {
  for (int64_t m = 0; m < d->Mo; m++)
    for (int32_t t = 0; t < d->T; t++)
      for (int64_t k = 0; k < d->K; k++) d->ref[m * d->K + k] += d->slot_y[(m * d->T + t) * d->K + k];
}

/* ---- one precision ------------------------------------------------------------------------------ */
typedef struct result {
  double err, ms, bytes;
} result;

static moe_weights plain_weights(const stack *s, moe_precision p) {
  const plain_mat *a = &s->w13[fmt_of(p)], *b = &s->w2[fmt_of(p)];
  moe_weights w;
  memset(&w, 0, sizeof w); /* zero: blocks and groups of 128 */
  w.precision = p, w.E = s->E, w.N = s->N, w.K = s->K;
  w.w13 = a->q, w.w2 = b->q;
  w.w13_scale = a->scale, w.w2_scale = b->scale;
  w.w13_zero = a->zero, w.w2_zero = b->zero;
  w.w13_e8m0 = a->e8m0, w.w2_e8m0 = b->e8m0;
  w.b13 = s->b13, w.b2 = s->b2;
  return w;
}

static moe_status pack_stack(const stack *s, moe_precision p, moe_experts *ex, void **buf) {
  moe_weights w = plain_weights(s, p);
  size_t n = moe_pack_size(&w);
  *buf = xmalloc(n);
  return moe_pack(&w, ex, *buf, n);
}

/* Bytes one expert's kernels read: its packed panels (codes and scales) and its biases. */
static double expert_bytes(const moe_experts *ex) {
  double b = (double)ex->panels13 * (double)ex->panel13_bytes;
  b += (double)ex->panels2 * (double)ex->panel2_bytes;
  return b + (ex->b13 ? 8.0 * (double)ex->N : 0.0) + (ex->b2 ? 4.0 * (double)ex->K : 0.0);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Warm-up once, then the median of d->runs timed calls, in ms (NAN on failure: *st says why). */
static double time_layer(const demo *d, const moe_experts *ex, const moe_call *c, void *ws, size_t ws_size,
                         moe_status *st) {
  double *t = (double *)xmalloc((size_t)d->runs * sizeof *t), med;
  *st = moe_fused_experts(ex, c, ws, ws_size, NULL);
  for (int i = 0; i < d->runs && *st == MOE_OK; i++) {
    double t0 = now_ms();
    *st = moe_fused_experts(ex, c, ws, ws_size, NULL);
    t[i] = now_ms() - t0;
  }
  qsort(t, (size_t)d->runs, sizeof *t, cmp_double);
  med = d->runs % 2 ? t[d->runs / 2] : 0.5 * (t[d->runs / 2 - 1] + t[d->runs / 2]);
  free(t);
  return *st == MOE_OK ? med : NAN;
}

/* ||out - ref|| / ||ref|| over the oracle's tokens. */
static double rel_error(const demo *d, const uint16_t *out) {
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < d->Mo * d->K; i++) {
    double diff = moe_bf16_to_f32(out[i]) - d->ref[i];
    num += diff * diff, den += d->ref[i] * d->ref[i];
  }
  return sqrt(num / den);
}

static moe_status run_precision(const demo *d, moe_precision p, result *r) {
  moe_experts ex, sh;
  void *ex_buf = NULL, *sh_buf = NULL, *ws = NULL;
  uint16_t *out = (uint16_t *)xmalloc((size_t)(d->M * d->K) * sizeof *out);
  size_t ws_size = 0;
  moe_call c;
  moe_status st = pack_stack(&d->routed, p, &ex, &ex_buf);
  if (st == MOE_OK && d->shared.E) st = pack_stack(&d->shared, p, &sh, &sh_buf);
  memset(&c, 0, sizeof c); /* bf16 in and out, SiLU, routed scale 1 (folded into the weights) */
  c.x = d->x, c.out = out, c.M = d->M, c.topk = d->topk;
  c.topk_weights = d->tw, c.topk_ids = d->ids, c.act = d->spec->act;
  c.shared = d->shared.E ? &sh : NULL, c.shared_gate = d->gate_vec;
  if (st == MOE_OK) st = moe_workspace_size(&ex, &c, &ws_size);
  if (st == MOE_OK) {
    ws = xmalloc(ws_size);
    r->ms = time_layer(d, &ex, &c, ws, ws_size, &st);
  }
  if (st == MOE_OK) {
    r->err = rel_error(d, out);
    r->bytes = (double)d->n_hit * expert_bytes(&ex) + (d->shared.E ? expert_bytes(&sh) : 0.0);
  }
  free(ws), free(sh_buf), free(ex_buf), free(out);
  return st;
}

/* Frees the plain weights of p's format once no later chosen precision needs them. */
static void release_format(demo *d, moe_precision p) {
  for (int q = (int)p + 1; q < MOE_PREC_COUNT; q++)
    if (d->use[q] && fmt_of((moe_precision)q) == fmt_of(p)) return;
  stack_free_format(&d->routed, fmt_of(p));
  stack_free_format(&d->shared, fmt_of(p));
}

/* ---- output ------------------------------------------------------------------------------------- */
static void print_header(const demo *d) {
  const model_spec *sp = d->spec;
  static const char *route[] = {"softmax", "sigmoid", "grouped", "biased grouped"};
  printf("moe_demo: %s  K %lld, N %lld, E %lld, topk %d, %s%s", sp->name, (long long)d->K,
         (long long)d->routed.N, (long long)d->E, d->topk, route[sp->route],
         sp->renormalize ? " + renormalize" : "");
  if (sp->n_group) printf(" (%d groups, keep %d, rsf %.1f)", sp->n_group, sp->topk_group, sp->rsf);
  printf("  |  M %lld  |  threads %d  |  ISA %s\n", (long long)d->M, d->threads, moe_isa_name(moe_get_isa()));
  if (sp->shared_N)
    printf("  shared expert: N %lld%s\n", (long long)sp->shared_N, sp->shared_gate ? ", sigmoid gate" : "");
  if (sp->act == MOE_ACT_SWIGLU_OAI)
    printf("  activation: swiglu-oai (alpha 1.702, limit 7), biases, gate/up interleaved\n");
  if (d->E < sp->E)
    printf("  note: experts cut from %lld to %lld to keep memory modest (--experts)\n", (long long)sp->E,
           (long long)d->E);
  if (d->routed.N < sp->N)
    printf("  note: intermediate size cut from %lld to %lld to keep memory modest (--n)\n", (long long)sp->N,
           (long long)d->routed.N);
  printf("  experts hit: %lld of %lld%s\n", (long long)d->n_hit, (long long)d->E,
         d->all_experts || d->n_hit == d->E ? "" : " (the others are never read: left zero, --all-experts)");
  printf("  rel.err: vs a float64 oracle on the original f32 weights, first %lld token(s)\n",
         (long long)d->Mo);
  printf("  time: median of %d runs after one warm-up\n", d->runs);
}

static void print_table_head(void) {
  printf("\n%-11s %10s %11s %10s %9s %12s\n", "precision", "rel.err", "ms/layer", "tokens/s", "MB read",
         "weight GB/s");
  printf("%-11s %10s %11s %10s %9s %12s\n", "-----------", "----------", "-----------", "----------",
         "---------", "------------");
}

static void print_row(const demo *d, moe_precision p, const result *r) {
  printf("%-11s %10.3e %11.3f %10.1f %9.1f %12.3f\n", moe_precision_name(p), r->err, r->ms,
         (double)d->M / (r->ms * 1e-3), r->bytes * 1e-6, r->bytes / (r->ms * 1e-3) * 1e-9);
  fflush(stdout);
}

int main(int argc, char **argv) {
  options o;
  demo d;
  double t0;
  int rc = 0;
  if (parse_options(argc, argv, &o) != 0) return 2;
  if (demo_init(&d, &o) != 0) return 2;
  print_header(&d);
  t0 = now_ms();
  build_stack(&d, &d.routed, 0);
  if (d.shared.E) build_stack(&d, &d.shared, 1);
  oracle_finish(&d);
  printf("  setup: weights generated, quantized and the oracle computed in %.1f s\n", (now_ms() - t0) * 1e-3);
  print_table_head();
  for (int p = 0; p < MOE_PREC_COUNT; p++) {
    result r = {0.0, 0.0, 0.0};
    moe_status st;
    if (!d.use[p]) continue;
    st = run_precision(&d, (moe_precision)p, &r);
    if (st != MOE_OK) {
      printf("%-11s failed: %s\n", moe_precision_name((moe_precision)p), moe_status_str(st));
      rc = 1;
    } else {
      print_row(&d, (moe_precision)p, &r);
      if (r.err != r.err) rc = 1;
    }
    release_format(&d, (moe_precision)p);
  }
  stack_free(&d.routed), stack_free(&d.shared);
  free(d.x), free(d.xf), free(d.logits), free(d.corr_bias), free(d.gate_vec);
  free(d.tw), free(d.ids), free(d.hit), free(d.shared_scale), free(d.slot_y), free(d.ref);
  return rc;
}
