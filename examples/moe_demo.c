/* moe_demo — one MoE layer of a real model, end to end, in every compiled precision.
 *
 * Random weights ~N(0,1)/sqrt(fan_in) (tests/kit.h, the same numbers the tests and benchmarks use for
 * a seed) are generated once per expert in f32 and quantized by the library's quantizers into each
 * precision's plain layout; random router logits with a per-expert popularity skew are routed by
 * moe_route(); the fused layer then runs in each precision. The table shows the error against a
 * float64 oracle that uses the ORIGINAL f32 weights (so it is each precision's total quantization +
 * compute error), the speed, and the microkernels that ran.
 *
 *   moe_demo [--model NAME] [--m M] [--precision LIST] [--threads T] [--experts E] [--n N]
 *            [--runs R] [--seed S] [--isa TIER] [--all-experts]
 *
 * The layer reads only the experts its tokens are routed to. By default the demo generates just
 * those and leaves the others zero (generating and quantizing every expert of a big model takes far
 * longer than the layer itself); --all-experts generates them all. The results are the same.
 *
 * Exit status: 0 on success, 1 when a library call fails or an error is NaN, 2 on bad options
 * (including --isa with a tier this build or CPU cannot run).
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#define MOE_IMPLEMENTATION
#include "kit.h" /* tests/kit.h: model shapes, RNG, plain weights; includes moe.h */

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

/* ---- models: kit.h's table, cut here to keep the demo's memory modest --------------------------- */
typedef struct model_cut {
  const char *name;
  int64_t E, N; /* default --experts and --n; 0: the model's */
} model_cut;

static const model_cut CUTS[] = {{"mixtral-8x7b", 0, 3584}, {"deepseek-v3", 16, 0}, {"llama-4-scout", 4, 0}};

static model_cut cut_of(const kit_model *m) {
  model_cut none = {NULL, 0, 0};
  for (size_t i = 0; i < sizeof CUTS / sizeof CUTS[0]; i++)
    if (strcmp(CUTS[i].name, m->name) == 0) return CUTS[i];
  return none;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* ---- plain weight formats ----------------------------------------------------------------------- */
typedef enum wfmt { FMT_BF16, FMT_FP16, FMT_INT8, FMT_FP8, FMT_INT4, FMT_MXFP4, FMT_COUNT } wfmt;

/* The plain format a precision packs from (both INT4 precisions share one). */
static wfmt fmt_of(moe_precision p) {
  static const wfmt f[MOE_PREC_COUNT] = {FMT_BF16, FMT_FP16, FMT_INT8,  FMT_FP8,
                                         FMT_INT4, FMT_INT4, FMT_MXFP4};
  return f[p];
}

/* E experts of one shape (the routed experts, or the shared expert with E = 1), in every plain format
 * some chosen precision needs (fmt[f].w13 == NULL: not needed). */
typedef struct stack {
  int64_t E, N, K;
  int biases;
  kit_weights fmt[FMT_COUNT];
} stack;

/* One expert's original f32 weights: W13 [2N, K] gate rows first, W2 [K, N], biases or NULL. */
typedef struct expert_f32 {
  float *w13, *w2, *b13, *b2;
} expert_f32;

/* ---- the demo's state --------------------------------------------------------------------------- */
typedef struct options {
  const kit_model *model;
  int64_t M, E, N; /* E, N: 0 means the model's default (with its cut) */
  int64_t threads, runs;
  uint64_t seed;
  int all_experts; /* generate the experts no token uses too */
  int use[MOE_PREC_COUNT];
  moe_isa isa_cap; /* highest kernel tier allowed (MOE_ISA_COUNT: no cap) */
} options;

typedef struct demo {
  const kit_model *spec;
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
  double ms_inputs, ms_weights, ms_pack; /* setup time: inputs and routing, weights, packing */
} demo;

/* ---- options ------------------------------------------------------------------------------------ */
static void usage(FILE *f) {
  fprintf(f,
          "usage: moe_demo [--model NAME] [--m M] [--precision LIST] [--threads T] [--experts E]\n"
          "                [--n N] [--runs R] [--seed S] [--isa TIER] [--all-experts]\n"
          "  --model      qwen3-30b-a3b (default)");
  for (int i = 0; i < kit_model_count(); i++)
    if (strcmp(kit_model_at(i)->name, "qwen3-30b-a3b") != 0) fprintf(f, ", %s", kit_model_at(i)->name);
  fprintf(f,
          "\n  --m          tokens (default 8)\n"
          "  --precision  comma-separated list or 'all' (default: every compiled precision)\n"
          "  --threads    threads (default: OpenMP's default, all cores)\n"
          "  --experts    routed experts kept (default: all; 16 for deepseek-v3, 4 for llama-4-scout)\n"
          "  --n          expert intermediate size (default: the model's; 3584 for mixtral-8x7b)\n"
          "  --runs       timed runs, median reported (default 5)\n"
          "  --seed       random seed (default 1)\n"
          "  --isa        highest kernel tier:");
  for (int i = 0; i < MOE_ISA_COUNT; i++) fprintf(f, " %s", moe_isa_name((moe_isa)i));
  fprintf(f, " (default: the best this CPU runs)\n"
             "  --all-experts  also generate the experts no token is routed to (default: left zero)\n");
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

static const kit_model *find_model(const char *name) {
  const kit_model *m = kit_model_find(name);
  if (!m) fprintf(stderr, "moe_demo: unknown model '%s'\n", name ? name : "");
  return m;
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

/* A tier this build and CPU run; otherwise says why (never silently runs a lower tier). */
static int parse_isa(const char *name, moe_isa *isa) {
  int compiled = 0;
  *isa = moe_isa_from_name(name ? name : "");
  if (*isa == MOE_ISA_COUNT) {
    fprintf(stderr, "moe_demo: unknown ISA tier '%s'\n", name ? name : "");
    return -1;
  }
  if (moe_isa_available(*isa)) return 0;
  for (int i = 0; i < moe_kernel_count(); i++) compiled |= moe_kernel_at(i)->isa == *isa;
  fprintf(stderr, "moe_demo: --isa %s: %s; this machine runs:", name,
          compiled ? "this CPU (or OS) lacks the instructions of that tier"
                   : "no kernels of that tier are compiled in (not written yet, or removed by MOE_NO_*)");
  for (int i = 0; i < MOE_ISA_COUNT; i++)
    if (moe_isa_available((moe_isa)i)) fprintf(stderr, " %s", moe_isa_name((moe_isa)i));
  fprintf(stderr, "\n");
  exit(2);
}

static int parse_options(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  o->model = kit_model_find("qwen3-30b-a3b"), o->M = 8, o->runs = 5, o->seed = 1, o->isa_cap = MOE_ISA_COUNT;
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
  kit_rng r = kit_rng_stream(d->seed, UINT64_MAX); /* a stream no expert uses */
  float *pop = (float *)kit_malloc((size_t)d->E * sizeof *pop);
  d->x = (uint16_t *)kit_malloc((size_t)(d->M * d->K) * sizeof *d->x);
  d->xf = (float *)kit_malloc((size_t)(d->M * d->K) * sizeof *d->xf);
  kit_fill_bf16(&r, d->x, d->M * d->K, 1.0);
  moe_convert_to_f32(MOE_BF16, d->x, d->xf, (size_t)(d->M * d->K));
  kit_fill_normal(&r, pop, d->E, 0.7);
  d->logits = (float *)kit_malloc((size_t)(d->M * d->E) * sizeof *d->logits);
  for (int64_t i = 0; i < d->M * d->E; i++) d->logits[i] = (float)kit_normal(&r) + pop[i % d->E];
  free(pop);
  if (d->spec->route == MOE_ROUTE_BIASED_GROUPED) {
    d->corr_bias = (float *)kit_malloc((size_t)d->E * sizeof *d->corr_bias);
    kit_fill_normal(&r, d->corr_bias, d->E, 0.05);
  }
  if (d->spec->shared_gate) {
    d->gate_vec = (float *)kit_malloc((size_t)d->K * sizeof *d->gate_vec);
    kit_fill_normal(&r, d->gate_vec, d->K, 1.0 / sqrt((double)d->K));
  }
}

static moe_status route_tokens(demo *d) {
  moe_router r = kit_model_router(d->spec);
  moe_status st;
  r.E = (int32_t)d->E, r.correction_bias = d->corr_bias;
  d->tw = (float *)kit_malloc((size_t)(d->M * d->topk) * sizeof *d->tw);
  d->ids = (int32_t *)kit_malloc((size_t)(d->M * d->topk) * sizeof *d->ids);
  st = moe_route(&r, d->logits, MOE_F32, d->M, d->tw, d->ids);
  d->hit = (char *)kit_calloc((size_t)d->E);
  d->n_hit = 0;
  for (int64_t i = 0; st == MOE_OK && i < d->M * d->topk; i++)
    if (!d->hit[d->ids[i]]) d->hit[d->ids[i]] = 1, d->n_hit++;
  return st;
}

/* Sizes from the model and the cuts; the inputs; the routing; the oracle's buffers. */
static int demo_init(demo *d, const options *o) {
  const kit_model *sp = o->model;
  model_cut cut = cut_of(sp);
  int64_t N = o->N ? o->N : (cut.N ? cut.N : sp->N);
  moe_status st;
  memset(d, 0, sizeof *d);
  d->spec = sp, d->M = o->M, d->K = sp->K, d->topk = sp->topk;
  d->E = o->E ? o->E : (cut.E ? cut.E : sp->E);
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
  d->routed.E = d->E, d->routed.N = N, d->routed.K = d->K, d->routed.biases = sp->biases;
  if (sp->shared_N) d->shared.E = 1, d->shared.N = sp->shared_N, d->shared.K = d->K;
  make_inputs(d);
  if ((st = route_tokens(d)) != MOE_OK) {
    fprintf(stderr, "moe_demo: moe_route: %s\n", moe_status_str(st));
    if (sp->n_group) /* topk must fit in the experts of the kept groups */
      fprintf(stderr, "moe_demo: %s's grouped routing needs --experts a multiple of %d, at least %d\n",
              sp->name, sp->n_group, sp->topk * sp->n_group / sp->topk_group);
    return -1;
  }
  d->slot_y = (double *)kit_calloc((size_t)(d->Mo * d->T * d->K) * sizeof *d->slot_y);
  d->ref = (double *)kit_calloc((size_t)(d->Mo * d->K) * sizeof *d->ref);
  d->shared_scale = (double *)kit_malloc((size_t)d->Mo * sizeof *d->shared_scale);
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
    const float *gr = w->w13 + n * K, *ur = w->w13 + (N + n) * K;
    double g = w->b13 ? w->b13[n] : 0.0, u = w->b13 ? w->b13[N + n] : 0.0;
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
  double *h = (double *)kit_malloc((size_t)N * sizeof *h);
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

/* gpt-oss checkpoints interleave the gate and up rows (row 2i gate i, row 2i+1 up i). Writes the
 * generated W13 and b13 in that layout, then reads them back with the library's importer, as an
 * engine loading such a checkpoint would. */
static void via_interleaved_checkpoint(const stack *s, expert_f32 *w) {
  int64_t N = s->N, K = s->K;
  float *ckpt = (float *)kit_malloc((size_t)(2 * N * K) * sizeof(float));
  for (int64_t n = 0; n < N; n++) {
    memcpy(ckpt + 2 * n * K, w->w13 + n * K, (size_t)K * sizeof(float));
    memcpy(ckpt + (2 * n + 1) * K, w->w13 + (N + n) * K, (size_t)K * sizeof(float));
  }
  moe_deinterleave_gate_up(ckpt, w->w13, 1, N, (size_t)K * sizeof(float));
  for (int64_t n = 0; w->b13 && n < N; n++) ckpt[2 * n] = w->b13[n], ckpt[2 * n + 1] = w->b13[N + n];
  if (w->b13) moe_deinterleave_gate_up(ckpt, w->b13, 1, N, sizeof(float));
  free(ckpt);
}

/* Expert e: generate in f32 (the shared expert from a stream past the routed ones), feed the oracle,
 * quantize into every needed format, keep the biases. */
static void build_expert(const demo *d, stack *s, int is_shared, int64_t e) {
  int64_t N = s->N, K = s->K, stream = is_shared ? d->spec->E : e;
  expert_f32 w = {NULL, NULL, NULL, NULL};
  w.w13 = (float *)kit_malloc((size_t)(2 * N * K) * sizeof(float));
  w.w2 = (float *)kit_malloc((size_t)(K * N) * sizeof(float));
  kit_expert_f32(d->seed, stream, N, K, w.w13, w.w2);
  if (s->biases) {
    w.b13 = (float *)kit_malloc((size_t)(2 * N) * sizeof(float));
    w.b2 = (float *)kit_malloc((size_t)K * sizeof(float));
    kit_expert_bias(d->seed, stream, N, K, w.b13, w.b2);
  }
  if (d->spec->interleaved && !is_shared) via_interleaved_checkpoint(s, &w);
  oracle_add(d, is_shared, e, &w, N);
  for (int f = 0; f < FMT_COUNT; f++) {
    kit_weights *kw = &s->fmt[f];
    if (!kw->w13) continue;
    kit_weights_set_expert(kw, e, w.w13, w.w2);
    if (kw->b13) memcpy(kw->b13 + e * 2 * N, w.b13, (size_t)(2 * N) * sizeof(float));
    if (kw->b2) memcpy(kw->b2 + e * K, w.b2, (size_t)K * sizeof(float));
  }
  free(w.w13), free(w.w2), free(w.b13), free(w.b2);
}

/* The experts of a stack that the layer reads (all with --all-experts), expert by expert (in
 * parallel), so only a few f32 experts live at once. */
static void build_stack(const demo *d, stack *s, int is_shared) {
  for (int p = 0; p < MOE_PREC_COUNT; p++) {
    kit_weights *kw = &s->fmt[fmt_of((moe_precision)p)];
    if (d->use[p] && !kw->w13) kit_weights_alloc(kw, (moe_precision)p, s->E, s->N, s->K, 0, 0, 0, s->biases ? KIT_BIAS : 0);
  }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1)
#endif
  for (int64_t e = 0; e < s->E; e++)
    if (is_shared || d->all_experts || d->hit[e]) build_expert(d, s, is_shared, e);
}

static void stack_free(stack *s) {
  for (int f = 0; f < FMT_COUNT; f++) kit_weights_free(&s->fmt[f]);
}

/* The oracle's output: each token's slots summed in a fixed order. */
static void oracle_finish(demo *d) {
  for (int64_t m = 0; m < d->Mo; m++)
    for (int32_t t = 0; t < d->T; t++)
      for (int64_t k = 0; k < d->K; k++) d->ref[m * d->K + k] += d->slot_y[(m * d->T + t) * d->K + k];
}

/* ---- one precision ------------------------------------------------------------------------------ */
typedef struct result {
  double err, ms, bytes, ms_pack;
} result;

static moe_status pack_stack(const stack *s, moe_precision p, moe_experts *ex, void **buf) {
  moe_weights w = s->fmt[fmt_of(p)].w;
  size_t n;
  w.precision = p; /* both INT4 precisions pack from one plain format */
  n = moe_pack_size(&w);
  moe_parallel all = {NULL, NULL, 0}; /* OpenMP's threads, as the layer calls */
  *buf = kit_malloc(n);
  return moe_pack_parallel(&w, ex, *buf, n, &all);
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
  double *t = (double *)kit_malloc((size_t)d->runs * sizeof *t), med;
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
  uint16_t *out = (uint16_t *)kit_malloc((size_t)(d->M * d->K) * sizeof *out);
  size_t ws_size = 0;
  moe_call c = MOE_ZERO_INIT; /* bf16 in and out, SiLU, routed scale 1 (folded into the weights) */
  double t0 = now_ms();
  moe_status st = pack_stack(&d->routed, p, &ex, &ex_buf);
  if (st == MOE_OK && d->shared.E) st = pack_stack(&d->shared, p, &sh, &sh_buf);
  r->ms_pack = now_ms() - t0;
  c.x = d->x, c.out = out, c.M = d->M, c.topk = d->topk;
  c.topk_weights = d->tw, c.topk_ids = d->ids, c.act = d->spec->act;
  c.shared = d->shared.E ? &sh : NULL, c.shared_gate = d->gate_vec;
  if (st == MOE_OK) st = moe_workspace_size(&ex, &c, &ws_size);
  if (st == MOE_OK) {
    ws = kit_malloc(ws_size);
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
  kit_weights_free(&d->routed.fmt[fmt_of(p)]);
  kit_weights_free(&d->shared.fmt[fmt_of(p)]);
}

/* ---- output ------------------------------------------------------------------------------------- */
static void print_experts_hit(const demo *d) {
  printf("  experts: each token goes to %d of the %lld experts; the %lld token%s together use %lld.\n", d->topk,
         (long long)d->E, (long long)d->M, d->M == 1 ? "" : "s", (long long)d->n_hit);
  if (!d->all_experts && d->n_hit < d->E)
    printf("           The layer reads only those, so only they were generated; the other %lld stay zero\n"
           "           (--all-experts generates them too: slower setup, same results).\n",
           (long long)(d->E - d->n_hit));
}

static void print_header(const demo *d) {
  const kit_model *sp = d->spec;
  static const char *route[] = {"softmax", "sigmoid", "grouped", "biased grouped"};
  printf("moe_demo: %s  K %lld, N %lld, E %lld, topk %d, %s%s", sp->name, (long long)d->K,
         (long long)d->routed.N, (long long)d->E, d->topk, route[sp->route],
         sp->renormalize ? " + renormalize" : "");
  if (sp->n_group) printf(" (%d groups, keep %d, rsf %.1f)", sp->n_group, sp->topk_group, sp->rsf);
  printf("  |  M %lld  |  threads %d  |  best tier %s\n", (long long)d->M, d->threads,
         moe_isa_name(moe_get_isa()));
  if (sp->shared_N)
    printf("  shared expert: N %lld%s\n", (long long)sp->shared_N, sp->shared_gate ? ", sigmoid gate" : "");
  if (sp->act == MOE_ACT_SWIGLU_OAI)
    printf("  activation: swiglu-oai (alpha 1.702, limit 7), biases, gate/up interleaved in the checkpoint\n");
  if (d->E < sp->E)
    printf("  note: experts cut from %lld to %lld to keep memory modest (--experts)\n", (long long)sp->E,
           (long long)d->E);
  if (d->routed.N < sp->N)
    printf("  note: intermediate size cut from %lld to %lld to keep memory modest (--n)\n", (long long)sp->N,
           (long long)d->routed.N);
  print_experts_hit(d);
  printf("  rel.err: vs a float64 oracle on the original f32 weights, first %lld token(s)\n",
         (long long)d->Mo);
  printf("  time: median of %d runs after one warm-up; kernel: the GEMM microkernels that ran\n", d->runs);
}

static void print_table_head(void) {
  printf("\n%-11s %10s %11s %10s %9s %12s  %s\n", "precision", "rel.err", "ms/layer", "tokens/s", "MB read",
         "weight GB/s", "kernel");
  printf("%-11s %10s %11s %10s %9s %12s  %s\n", "-----------", "----------", "-----------", "----------",
         "---------", "------------", "------");
}

static void print_row(const demo *d, moe_precision p, const result *r) {
  const moe_gemm_config *k = moe_gemm_select(p);
  printf("%-11s %10.3e %11.3f %10.1f %9.1f %12.3f  %s\n", moe_precision_name(p), r->err, r->ms,
         (double)d->M / (r->ms * 1e-3), r->bytes * 1e-6, r->bytes / (r->ms * 1e-3) * 1e-9, k ? k->name : "-");
  fflush(stdout);
}

static void demo_free(demo *d) {
  stack_free(&d->routed), stack_free(&d->shared);
  free(d->x), free(d->xf), free(d->logits), free(d->corr_bias), free(d->gate_vec);
  free(d->tw), free(d->ids), free(d->hit), free(d->shared_scale), free(d->slot_y), free(d->ref);
}

int main(int argc, char **argv) {
  options o;
  demo d;
  double t0 = now_ms();
  int rc = 0;
  if (parse_options(argc, argv, &o) != 0) return 2;
  if (demo_init(&d, &o) != 0) return 2;
  d.ms_inputs = now_ms() - t0;
  print_header(&d);
  t0 = now_ms();
  build_stack(&d, &d.routed, 0);
  if (d.shared.E) build_stack(&d, &d.shared, 1);
  oracle_finish(&d);
  d.ms_weights = now_ms() - t0;
  printf("  weights: generated, quantized and the oracle computed in %.1f s\n", d.ms_weights * 1e-3);
  print_table_head();
  for (int p = 0; p < MOE_PREC_COUNT; p++) {
    result r = {0.0, 0.0, 0.0, 0.0};
    moe_status st;
    if (!d.use[p]) continue;
    st = run_precision(&d, (moe_precision)p, &r);
    d.ms_pack += r.ms_pack;
    if (st != MOE_OK) {
      printf("%-11s failed: %s\n", moe_precision_name((moe_precision)p), moe_status_str(st));
      rc = 1;
    } else {
      print_row(&d, (moe_precision)p, &r);
      if (r.err != r.err) rc = 1;
    }
    release_format(&d, (moe_precision)p);
  }
  printf("\nsetup: %.1f s in all (inputs and routing %.2f s, weights and oracle %.1f s, packing %.2f s)\n",
         (d.ms_inputs + d.ms_weights + d.ms_pack) * 1e-3, d.ms_inputs * 1e-3, d.ms_weights * 1e-3,
         d.ms_pack * 1e-3);
  demo_free(&d);
  return rc;
}
