/* moe_checkpoint — one MoE layer of a real checkpoint (safetensors or GGUF), loaded with
 * moe_checkpoint.h, packed and run.
 *
 *   moe_checkpoint PATH --layer L [--x X.npy --out OUT.npy] [--threads T] [--precision P] [--m M]
 *                  [--save-packed FILE | --packed FILE]
 *
 * PATH is a .safetensors file (config.json beside it), a directory with config.json and
 * model.safetensors or model.safetensors.index.json and its shards, or a .gguf file. The tool prints
 * the architecture it found, loads layer L's experts, router (and shared expert) in precision P
 * ("auto": the one that holds the file's weights exactly; or a moe_precision name such as bf16,
 * int8, fp8, int4-w4a8, int4-w4a16, mxfp4), packed as they are read (moe_ckpt_load_layer_packed: one
 * expert at a time per thread, never the whole plain layer).
 *
 * With --x, it reads X.npy ([M, K] float32, K the model's hidden size), computes the router logits
 * (moe_ckpt_router_logits), runs the layer (moe_forward: routing, routed experts, shared expert) and
 * writes the output [M, K] float32 to OUT.npy (examples/npy.h). Without --x it makes M (--m, default
 * 1) deterministic random tokens, runs the layer a few times and prints a summary: architecture,
 * precision, experts, the median time of a layer call, and the output's RMS.
 *
 * Threads: OpenMP when built with it (--threads sets its thread count; default all cores).
 * Exit status: 0 on success, 1 when the checkpoint, a file or a library call fails, 2 on bad usage.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, and the reader's open/mmap under -std=c11 */
#define MOE_CHECKPOINT_IMPLEMENTATION
#include "moe_checkpoint.h" /* includes moe.h: the library itself is libmoe, linked (moe_demo.c shows the */
#include "moe_packfile.h"   /* header-only way); --save-packed, --packed: moe_packfile.h, in libmoe */
#include "npy.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define WARMUP_RUNS 1
#define TIMED_RUNS 5

/* ---- options ------------------------------------------------------------------------------------ */
typedef struct options {
  const char *path, *x_path, *out_path;
  const char *save_packed, *packed; /* --save-packed PATH, --packed PATH */
  int all_layers;                   /* --all-layers: every MoE layer, time per phase */
  int64_t layer, threads, M;
  int precision; /* MOE_CKPT_AUTO or a moe_precision */
  int m_given;
} options;

/* The library's default threads (OpenMP's; one without OpenMP): loading and packing take them. */
static const moe_parallel all_threads = {NULL, NULL, 0};

static void usage(FILE *f) {
  fprintf(f,
          "usage: moe_checkpoint PATH --layer L [--x X.npy --out OUT.npy] [--threads T] [--precision P] [--m M]\n"
          "                      [--save-packed FILE | --packed FILE]\n"
          "       moe_checkpoint PATH --all-layers [--save-packed FILE | --packed FILE] [--threads T] [--precision P]\n"
          "  PATH         a .safetensors file (config.json beside it), a directory with config.json and\n"
          "               model.safetensors or model.safetensors.index.json + shards, or a .gguf file\n"
          "  --layer      the MoE layer to load (0-based)\n"
          "  --x          input activations, an [M, K] float32 .npy (K: the hidden size); needs --out\n"
          "  --out        where the layer's output [M, K] float32 .npy goes\n"
          "  --threads    threads (default: OpenMP's default, all cores)\n"
          "  --precision  auto (default: the precision that holds the file's weights exactly) or one of:");
  for (int p = 0; p < MOE_PREC_COUNT; p++) fprintf(f, " %s", moe_precision_name((moe_precision)p));
  fprintf(f, "\n"
             "  --m          without --x: random tokens to run (default 1)\n"
             "  --save-packed  write the layer's packed experts (and shared expert) to FILE (moe_packfile.h)\n"
             "  --packed     map the layer's packed experts from FILE (written by --save-packed) instead of\n"
             "               importing and packing them; the router still comes from PATH\n"
             "  --all-layers  load every MoE layer (pack it, or map it with --packed; --save-packed writes\n"
             "               them all) and print the time of each phase and in total, then one layer call\n"
             "Without --x the layer runs %d times on random tokens and a summary is printed.\n",
          WARMUP_RUNS + TIMED_RUNS);
}

static int parse_int(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *v) {
  char *end;
  long long x = s ? strtoll(s, &end, 10) : 0;
  if (!s || *s == '\0' || *end != '\0' || x < lo || x > hi) {
    fprintf(stderr, "moe_checkpoint: %s needs an integer in [%lld, %lld]\n", opt, (long long)lo, (long long)hi);
    return -1;
  }
  *v = x;
  return 0;
}

static int parse_precision(const char *s, int *precision) {
  if (!s) {
    fprintf(stderr, "moe_checkpoint: --precision needs a name\n");
    return -1;
  }
  if (strcmp(s, "auto") == 0) {
    *precision = MOE_CKPT_AUTO;
    return 0;
  }
  for (int p = 0; p < MOE_PREC_COUNT; p++)
    if (strcmp(s, moe_precision_name((moe_precision)p)) == 0) {
      if (!moe_precision_compiled((moe_precision)p)) {
        fprintf(stderr, "moe_checkpoint: precision '%s' is compiled out\n", s);
        return -1;
      }
      *precision = p;
      return 0;
    }
  fprintf(stderr, "moe_checkpoint: unknown precision '%s'\n", s);
  return -1;
}

static int parse_options(int argc, char **argv, options *o) {
  int have_layer = 0;
  memset(o, 0, sizeof *o);
  o->M = 1, o->precision = MOE_CKPT_AUTO;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (strcmp(a, "--all-layers") == 0) { /* the one option without a value */
      o->all_layers = 1;
      continue;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    }
    if (strncmp(a, "--", 2) != 0) { /* the one positional argument */
      if (o->path) {
        fprintf(stderr, "moe_checkpoint: more than one PATH ('%s', '%s')\n", o->path, a);
        return -1;
      }
      o->path = a;
      continue;
    }
    if (!v && (strcmp(a, "--layer") == 0 || strcmp(a, "--x") == 0 || strcmp(a, "--out") == 0 ||
               strcmp(a, "--save-packed") == 0 || strcmp(a, "--packed") == 0 ||
               strcmp(a, "--threads") == 0 || strcmp(a, "--precision") == 0 || strcmp(a, "--m") == 0)) {
      fprintf(stderr, "moe_checkpoint: %s needs a value\n", a);
      return -1;
    }
    if (strcmp(a, "--layer") == 0) bad = parse_int(a, v, 0, INT64_MAX, &o->layer), have_layer = 1;
    else if (strcmp(a, "--x") == 0) o->x_path = v;
    else if (strcmp(a, "--out") == 0) o->out_path = v;
    else if (strcmp(a, "--save-packed") == 0) o->save_packed = v;
    else if (strcmp(a, "--packed") == 0) o->packed = v;
    else if (strcmp(a, "--threads") == 0) bad = parse_int(a, v, 1, 4096, &o->threads);
    else if (strcmp(a, "--precision") == 0) bad = parse_precision(v, &o->precision);
    else if (strcmp(a, "--m") == 0) bad = parse_int(a, v, 1, 1 << 20, &o->M), o->m_given = 1;
    else {
      fprintf(stderr, "moe_checkpoint: unknown option '%s'\n", a);
      return -1;
    }
    if (bad) return -1;
    i++; /* every option takes a value */
  }
  if (!o->path) fprintf(stderr, "moe_checkpoint: no checkpoint PATH\n");
  else if (!have_layer && !o->all_layers) fprintf(stderr, "moe_checkpoint: --layer (or --all-layers) is required\n");
  else if (have_layer && o->all_layers) fprintf(stderr, "moe_checkpoint: --layer and --all-layers exclude each other\n");
  else if (o->all_layers && (o->x_path || o->m_given)) fprintf(stderr, "moe_checkpoint: --all-layers runs one random token\n");
  else if (!o->x_path != !o->out_path) fprintf(stderr, "moe_checkpoint: --x and --out go together\n");
  else if (o->x_path && o->m_given) fprintf(stderr, "moe_checkpoint: --m is for random tokens; with --x, M is X's rows\n");
  else if (o->save_packed && o->packed) fprintf(stderr, "moe_checkpoint: --save-packed and --packed exclude each other\n");
  else return 0;
  return -1;
}

/* ---- helpers ------------------------------------------------------------------------------------ */
static void die(const char *what, const char *msg) {
  fprintf(stderr, "moe_checkpoint: %s: %s\n", what, msg);
  exit(1);
}

/* A library status, with the reader's message when it wrote one (which may already start with
 * what: "layer 9: the model has 2 layers" is not prefixed twice). */
static void die_status(const char *what, moe_status st, const moe_ckpt_error *err) {
  size_t n = strlen(what);
  if (err && err->msg[0] && strncmp(err->msg, what, n) == 0 && err->msg[n] == ':') {
    fprintf(stderr, "moe_checkpoint: %s\n", err->msg);
    exit(1);
  }
  die(what, err && err->msg[0] ? err->msg : moe_status_str(st));
}

/* n1 * n2 * elt bytes, checked for overflow; never NULL. */
static void *alloc_array(const char *what, int64_t n1, int64_t n2, size_t elt) {
  void *p;
  size_t bytes;
  if (n1 < 0 || n2 < 0 || (n1 && (uint64_t)n2 > (uint64_t)(SIZE_MAX / elt) / (uint64_t)n1))
    die(what, "size overflows");
  bytes = (size_t)n1 * (size_t)n2 * elt;
  p = malloc(bytes ? bytes : 1);
  if (!p) die(what, "out of memory");
  return p;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Threads the library will use: OpenMP's (moe_parallel NULL), or 1 without OpenMP. */
static int setup_threads(int64_t requested) {
#ifdef _OPENMP
  if (requested > 0) omp_set_num_threads((int)requested);
  return omp_get_max_threads();
#else
  if (requested > 1) fprintf(stderr, "moe_checkpoint: built without OpenMP: running on 1 thread\n");
  return 1;
#endif
}

/* Deterministic tokens: xorshift64*, a sum of 12 uniforms - 6 (~N(0, 1)), times 1/sqrt(K). */
static void random_tokens(float *x, int64_t M, int64_t K) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  double scale = 1.0 / sqrt((double)K);
  for (int64_t i = 0; i < M * K; i++) {
    double sum = 0.0;
    for (int j = 0; j < 12; j++) {
      s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
      sum += (double)((s * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0);
    }
    x[i] = (float)((sum - 6.0) * scale);
  }
}

static double rms(const float *y, int64_t n, int64_t *nonfinite) {
  double s = 0.0;
  *nonfinite = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(y[i])) (*nonfinite)++;
    else s += (double)y[i] * y[i];
  }
  return n ? sqrt(s / (double)n) : 0.0;
}

static const char *quant_name(moe_ckpt_quant q) {
  switch (q) {
  case MOE_CKPT_QUANT_NONE: return "none";
  case MOE_CKPT_QUANT_FP8: return "fp8";
  case MOE_CKPT_QUANT_AWQ: return "awq";
  case MOE_CKPT_QUANT_GPTQ: return "gptq";
  case MOE_CKPT_QUANT_MXFP4: return "mxfp4";
  }
  return "?";
}

static const char *route_name(moe_route_kind k) {
  switch (k) {
  case MOE_ROUTE_SOFTMAX: return "softmax";
  case MOE_ROUTE_SIGMOID: return "sigmoid";
  case MOE_ROUTE_GROUPED: return "grouped softmax";
  case MOE_ROUTE_BIASED_GROUPED: return "biased grouped sigmoid";
  }
  return "?";
}

static const char *act_name(moe_activation a) {
  switch (a) {
  case MOE_ACT_SILU: return "silu";
  case MOE_ACT_GELU_TANH: return "gelu-tanh";
  case MOE_ACT_SWIGLU_OAI: return "swiglu-oai";
  }
  return "?";
}

static void print_config(const char *path, const moe_ckpt_config *c) {
  printf("moe_checkpoint: %s\n", path);
  printf("  architecture: %s (model_type \"%s\"), %lld layers", moe_ckpt_arch_name(c->arch), c->model_type,
         (long long)c->n_layers);
  if (c->first_dense) printf(", the first %lld dense", (long long)c->first_dense);
  if (c->moe_every > 1) printf(", MoE every %lld", (long long)c->moe_every);
  printf("\n  experts: E %lld, topk %lld, K %lld, N %lld", (long long)c->n_experts, (long long)c->topk,
         (long long)c->hidden, (long long)c->moe_inter);
  if (c->shared_inter) printf(", shared expert N %lld%s", (long long)c->shared_inter, c->shared_gated ? " (sigmoid gate)" : "");
  else printf(", no shared expert");
  printf("\n  routing: %s%s", c->sigmoid ? "sigmoid" : "softmax", c->norm_topk_prob ? " + renormalize" : "");
  if (c->n_group > 1) printf(", %d groups keep %d", c->n_group, c->topk_group);
  if (c->routed_scaling_factor != 1.0f) printf(", routed scaling factor %g", (double)c->routed_scaling_factor);
  if (c->swiglu_limit != 0.0f) printf(", swiglu alpha %g limit %g", (double)c->swiglu_alpha, (double)c->swiglu_limit);
  printf("\n");
  if (c->quant != MOE_CKPT_QUANT_NONE) {
    printf("  quantization: %s", quant_name(c->quant));
    if (c->quant == MOE_CKPT_QUANT_FP8) printf(", blocks %dx%d", c->block_n, c->block_k);
    if (c->quant == MOE_CKPT_QUANT_AWQ || c->quant == MOE_CKPT_QUANT_GPTQ)
      printf(", %d bits, group %d%s%s", c->bits, c->group, c->desc_act ? ", act-order" : "", c->gptq_v2 ? ", gptq_v2" : "");
    printf("\n");
  }
}

/* ex: the packed experts when they are loaded already (their biases are kept there), else NULL */
static void print_layer(int64_t layer, const moe_ckpt_layer *L, int shared, const moe_experts *ex) {
  const moe_router *r = &L->router;
  printf("  layer %lld: %s, precision %s\n", (long long)layer, L->how[0] ? L->how : "-",
         moe_precision_name(L->experts.precision));
  if (L->requant_rel_err != 0.0) printf("    requantization adds a relative error of up to %.3e\n", L->requant_rel_err);
  printf("    routed: E %lld, N %lld, K %lld, %s%s", (long long)L->experts.E, (long long)L->experts.N,
         (long long)L->experts.K, act_name(L->act), L->experts.b13 || L->experts.b2 || (ex && (ex->b13 || ex->b2)) ? ", biases" : "");
  if (L->act == MOE_ACT_SWIGLU_OAI) printf(" (alpha %g, limit %g)", (double)L->alpha, (double)L->limit);
  printf("\n    router: %s, topk %d%s", route_name(r->kind), r->topk, r->renormalize ? ", renormalize" : "");
  if (r->n_group > 1) printf(", %d groups keep %d", r->n_group, r->topk_group);
  if (r->routed_scaling_factor != 0.0f && r->routed_scaling_factor != 1.0f)
    printf(", routed scaling factor %g", (double)r->routed_scaling_factor);
  if (L->router_b) printf(", bias");
  if (r->correction_bias) printf(", correction bias");
  printf("\n");
  if (shared) printf("    shared expert: N %lld%s\n", (long long)L->shared.N, L->shared_gate ? ", sigmoid gate" : "");
}

/* The entry names of layer l in a packed file. */
static void entry_names(int64_t l, char *ex_name, char *sh_name, size_t n) {
  snprintf(ex_name, n, "layer.%lld.experts", (long long)l);
  snprintf(sh_name, n, "layer.%lld.shared", (long long)l);
}

/* Writes layer l's packed experts (and shared expert) to path; exits with a message on failure. */
static void save_packed(const char *path, int64_t l, const moe_experts *ex, const moe_experts *sh) {
  char en[64], sn[64];
  moe_packfile_error err;
  moe_packfile_entry e[2];
  double t0 = now_ms();
  moe_status st;
  entry_names(l, en, sn, sizeof en);
  e[0].name = en, e[0].experts = ex, e[1].name = sn, e[1].experts = sh;
  if ((st = moe_packfile_write(path, e, sh ? 2 : 1, &err)) != MOE_OK) die(path, err.msg);
  printf("  packed experts written to %s in %.1f ms\n", path, now_ms() - t0);
}

/* Layer l's packed experts from an open packed file into *ex (and *sh), checked against the layer. */
static void pf_layer(const moe_packfile *pf, const char *path, int64_t l, const moe_ckpt_layer *L, int has_shared,
                     moe_experts *ex, moe_experts *sh) {
  char en[64], sn[64], msg[600];
  const moe_experts *e, *s = NULL;
  entry_names(l, en, sn, sizeof en);
  e = moe_packfile_find(pf, en);
  if (has_shared) s = moe_packfile_find(pf, sn);
  if (!e || (has_shared && !s)) {
    snprintf(msg, sizeof msg, "no %s in it (written with --save-packed for this layer?)", !e ? en : sn);
    die(path, msg);
  }
  if (e->E != L->experts.E || e->N != L->experts.N || e->K != L->experts.K || e->precision != L->experts.precision ||
      (s && (s->N != L->shared.N || s->K != L->shared.K || s->precision != L->shared.precision))) {
    snprintf(msg, sizeof msg, "%s: E %lld N %lld K %lld %s, the checkpoint's layer is E %lld N %lld K %lld %s", en,
             (long long)e->E, (long long)e->N, (long long)e->K, moe_precision_name(e->precision), (long long)L->experts.E,
             (long long)L->experts.N, (long long)L->experts.K, moe_precision_name(L->experts.precision));
    die(path, msg);
  }
  *ex = *e;
  if (s) *sh = *s;
}

/* Maps path and takes layer l's packed experts from it (pf_layer). */
static moe_packfile *open_packed(const char *path, int64_t l, const moe_ckpt_layer *L, int has_shared, moe_experts *ex,
                                 moe_experts *sh) {
  moe_packfile_error err;
  moe_packfile *pf;
  if (moe_packfile_open(path, &pf, &err) != MOE_OK) die(path, err.msg);
  pf_layer(pf, path, l, L, has_shared, ex, sh);
  return pf;
}

/* --all-layers: every MoE layer read straight into packed experts (moe_ckpt_load_layer_packed), or its router read and its
 * experts mapped from a packed file; with --save-packed all written to one file. Prints each phase's time and the total, then
 * the time of one call of the first MoE layer on one random token (after --packed: straight from
 * the mapping, its pages faulted in by that call). */
static int all_layers(const options *o, moe_ckpt *ck) {
  const moe_ckpt_config *cfg = moe_ckpt_config_of(ck);
  const int64_t n = cfg->n_layers > 0 ? cfg->n_layers : 1;
  moe_ckpt_layer *L = (moe_ckpt_layer *)calloc((size_t)n, sizeof *L);
  moe_experts *ex = (moe_experts *)calloc((size_t)(2 * n), sizeof *ex);
  void **bufs = (void **)calloc((size_t)(2 * n), sizeof *bufs);
  char (*names)[64] = (char (*)[64])calloc((size_t)(2 * n), 64);
  moe_packfile_entry *ent = (moe_packfile_entry *)calloc((size_t)(2 * n), sizeof *ent);
  moe_packfile *pf = NULL;
  moe_ckpt_error err;
  double t_load = 0, t_map = 0, t_write = 0, t0 = now_ms(), t;
  int64_t first = -1, layers = 0;
  int n_ent = 0;
  if (!L || !ex || !bufs || !names || !ent) die("--all-layers", "out of memory");
  if (o->packed) {
    moe_packfile_error perr;
    t = now_ms();
    if (moe_packfile_open(o->packed, &pf, &perr) != MOE_OK) die(o->packed, perr.msg);
    t_map += now_ms() - t;
  }
  for (int64_t l = 0; l < cfg->n_layers; l++) {
    moe_status st;
    int shared;
    memset(&err, 0, sizeof err);
    t = now_ms();
    st = pf ? moe_ckpt_load_router(ck, l, o->precision, &L[l], &err) /* read and packed in one pass, owned by L[l] */
            : moe_ckpt_load_layer_packed(ck, l, o->precision, &L[l], &ex[2 * l], &ex[2 * l + 1], &err, &all_threads);
    t_load += now_ms() - t;
    if (st == MOE_ERR_EXPERT_ID) continue; /* a dense layer */
    if (st != MOE_OK) {
      char what[64];
      snprintf(what, sizeof what, "layer %lld", (long long)l);
      die_status(what, st, &err);
    }
    layers++, first = first < 0 ? l : first, shared = L[l].shared.E == 1;
    t = now_ms();
    if (pf) {
      pf_layer(pf, o->packed, l, &L[l], shared, &ex[2 * l], &ex[2 * l + 1]);
      t_map += now_ms() - t;
      continue;
    }
    entry_names(l, names[2 * l], names[2 * l + 1], 64);
    ent[n_ent].name = names[2 * l], ent[n_ent++].experts = &ex[2 * l];
    if (shared) ent[n_ent].name = names[2 * l + 1], ent[n_ent++].experts = &ex[2 * l + 1];
  }
  if (first < 0) die(o->path, "no MoE layer");
  if (o->save_packed) {
    moe_packfile_error perr;
    t = now_ms();
    if (moe_packfile_write(o->save_packed, ent, n_ent, &perr) != MOE_OK) die(o->save_packed, perr.msg);
    t_write = now_ms() - t;
  }
  printf("\nall layers: %lld MoE layers of %lld, %s\n", (long long)layers, (long long)cfg->n_layers,
         moe_precision_name(L[first].experts.precision));
  if (pf) printf("  read routers %.1f ms, map packed %.1f ms", t_load, t_map);
  else printf("  read, import and pack %.1f ms", t_load);
  if (o->save_packed) printf(", write %s %.1f ms", o->save_packed, t_write);
  printf("\n  total %.1f ms\n", now_ms() - t0);
  { /* one call of the first MoE layer on one random token */
    const moe_ckpt_layer *F = &L[first];
    const int64_t K = F->experts.K;
    float *x = (float *)alloc_array("tokens", 1, K, sizeof(float)), *out = (float *)alloc_array("output", 1, K, sizeof(float));
    float *logits = (float *)alloc_array("router logits", 1, F->router.E, sizeof(float));
    moe_call c = MOE_ZERO_INIT;
    size_t ws_size = 0;
    void *ws;
    moe_status st;
    random_tokens(x, 1, K);
    c.x = x, c.out = out, c.dtype = MOE_F32, c.M = 1, c.topk = F->router.topk;
    c.act = F->act, c.alpha = F->alpha, c.limit = F->limit;
    if (F->shared.E == 1) c.shared = &ex[2 * first + 1], c.shared_gate = F->shared_gate;
    if ((st = moe_forward_workspace_size(&ex[2 * first], &F->router, &c, &ws_size)) != MOE_OK) die_status("workspace", st, NULL);
    if (!(ws = malloc(ws_size ? ws_size : 1))) die("workspace", "out of memory");
    t = now_ms();
    moe_ckpt_router_logits(F, x, 1, logits);
    if ((st = moe_forward(&ex[2 * first], &F->router, logits, MOE_F32, &c, ws, ws_size, NULL)) != MOE_OK)
      die_status("moe_forward", st, NULL);
    printf("  first call of layer %lld (M 1%s): %.3f ms\n", (long long)first, pf ? ", from the mapping" : "", now_ms() - t);
    free(x), free(out), free(logits), free(ws);
  }
  for (int64_t i = 0; i < 2 * n; i++) free(bufs[i]);
  for (int64_t l = 0; l < cfg->n_layers; l++) moe_ckpt_layer_free(&L[l]);
  moe_packfile_close(pf);
  free(L), free(ex), free(bufs), free(names), free(ent);
  return 0;
}

/* ---- main --------------------------------------------------------------------------------------- */
int main(int argc, char **argv) {
  options o;
  moe_ckpt *ck = NULL;
  moe_ckpt_error err;
  moe_ckpt_layer L;
  moe_experts ex, sh;
  moe_packfile *pf = NULL;
  moe_call c = MOE_ZERO_INIT;
  void *ws;
  float *x, *logits, *out;
  npy_f32 X = {NULL, 0, 0};
  size_t ws_size = 0;
  int64_t M, K, E, nonfinite;
  int threads, has_shared;
  moe_status st;
  char what[256], msg[512];
  double t0;

  if (parse_options(argc, argv, &o) != 0) {
    usage(stderr);
    return 2;
  }
  threads = setup_threads(o.threads);

  memset(&err, 0, sizeof err);
  t0 = now_ms();
  if ((st = moe_ckpt_open(o.path, &ck, &err)) != MOE_OK) {
    snprintf(what, sizeof what, "%s", o.path);
    die_status(what, st, &err);
  }
  print_config(o.path, moe_ckpt_config_of(ck));
  if (o.all_layers) {
    int rc = all_layers(&o, ck);
    moe_ckpt_close(ck);
    return rc;
  }

  memset(&err, 0, sizeof err);
  memset(&L, 0, sizeof L);
  /* the layer read straight into packed experts (L owns them), or only its router beside a packed file */
  st = o.packed ? moe_ckpt_load_router(ck, o.layer, o.precision, &L, &err)
                : moe_ckpt_load_layer_packed(ck, o.layer, o.precision, &L, &ex, &sh, &err, &all_threads);
  if (st != MOE_OK) {
    snprintf(what, sizeof what, "layer %lld", (long long)o.layer);
    die_status(what, st, &err);
  }
  has_shared = L.shared.E == 1;
  print_layer(o.layer, &L, has_shared, o.packed ? NULL : &ex);

  /* The layer keeps what packing does not copy (router weights, biases, the shared gate): it lives
   * until the end. */
  if (o.packed) {
    double t1 = now_ms();
    printf("  loaded in %.1f ms\n", t1 - t0);
    pf = open_packed(o.packed, o.layer, &L, has_shared, &ex, &sh);
    printf("  packed experts mapped from %s in %.1f ms\n", o.packed, now_ms() - t1);
  } else {
    printf("  loaded and packed in %.1f ms\n", now_ms() - t0);
  }
  if (o.save_packed) save_packed(o.save_packed, o.layer, &ex, has_shared ? &sh : NULL);

  K = L.experts.K, E = L.router.E;
  if (o.x_path) {
    if (npy_read_f32(o.x_path, &X, msg, sizeof msg) != 0) die(o.x_path, msg);
    if (X.cols != K) {
      snprintf(msg, sizeof msg, "shape [%lld, %lld]: the model's hidden size is %lld, so [M, %lld] is needed",
               (long long)X.rows, (long long)X.cols, (long long)K, (long long)K);
      die(o.x_path, msg);
    }
    if (X.rows < 1) die(o.x_path, "no rows (M = 0)");
    M = X.rows, x = X.data;
  } else {
    M = o.M;
    x = (float *)alloc_array("tokens", M, K, sizeof(float));
    random_tokens(x, M, K);
  }
  out = (float *)alloc_array("output", M, K, sizeof(float));
  logits = (float *)alloc_array("router logits", M, E, sizeof(float));

  c.x = x, c.out = out, c.dtype = MOE_F32, c.M = M;
  c.topk = L.router.topk;
  c.act = L.act, c.alpha = L.alpha, c.limit = L.limit;
  if (has_shared) c.shared = &sh, c.shared_gate = L.shared_gate;
  /* the routed scaling factor stays in the router (it scales the routing weights) */
  if ((st = moe_forward_workspace_size(&ex, &L.router, &c, &ws_size)) != MOE_OK)
    die_status("moe_forward_workspace_size", st, NULL);
  ws = malloc(ws_size ? ws_size : 1);
  if (!ws) die("workspace", "out of memory");

  if (o.x_path) {
    moe_ckpt_router_logits(&L, x, M, logits);
    if ((st = moe_forward(&ex, &L.router, logits, MOE_F32, &c, ws, ws_size, NULL)) != MOE_OK)
      die_status("moe_forward", st, NULL);
    if (npy_write_f32(o.out_path, out, M, K, msg, sizeof msg) != 0) die(o.out_path, msg);
    printf("  %s [%lld, %lld] -> %s: output RMS %.6g\n", o.x_path, (long long)M, (long long)K, o.out_path,
           rms(out, M * K, &nonfinite));
    if (nonfinite) fprintf(stderr, "moe_checkpoint: warning: %lld non-finite values in the output\n", (long long)nonfinite);
  } else {
    double t_router[TIMED_RUNS], t_forward[TIMED_RUNS], t_layer[TIMED_RUNS], r, r_in;
    int64_t nonfinite_in;
    for (int i = 0; i < WARMUP_RUNS + TIMED_RUNS; i++) {
      double a = now_ms(), b;
      moe_ckpt_router_logits(&L, x, M, logits);
      b = now_ms();
      if ((st = moe_forward(&ex, &L.router, logits, MOE_F32, &c, ws, ws_size, NULL)) != MOE_OK)
        die_status("moe_forward", st, NULL);
      if (i >= WARMUP_RUNS) {
        t_router[i - WARMUP_RUNS] = b - a;
        t_forward[i - WARMUP_RUNS] = now_ms() - b;
        t_layer[i - WARMUP_RUNS] = now_ms() - a;
      }
    }
    r = rms(out, M * K, &nonfinite);
    r_in = rms(x, M * K, &nonfinite_in);
    printf("\nsummary: %s layer %lld, precision %s, E %lld (topk %d%s), K %lld, N %lld, M %lld, %d thread%s\n",
           moe_ckpt_arch_name(moe_ckpt_config_of(ck)->arch), (long long)o.layer,
           moe_precision_name(L.experts.precision), (long long)L.experts.E, c.topk, has_shared ? " + shared" : "",
           (long long)K, (long long)L.experts.N, (long long)M, threads, threads == 1 ? "" : "s");
    printf("  time per layer call: %.3f ms (median of %d; router logits %.3f ms, moe_forward %.3f ms)\n",
           median(t_layer, TIMED_RUNS), TIMED_RUNS, median(t_router, TIMED_RUNS), median(t_forward, TIMED_RUNS));
    printf("  output RMS: %.6g (input RMS %.6g)\n", r, r_in);
    if (nonfinite) {
      snprintf(msg, sizeof msg, "%lld non-finite values", (long long)nonfinite);
      die("output", msg);
    }
  }

  free(ws), free(logits), free(out);
  if (o.x_path) npy_free(&X);
  else free(x);
  moe_packfile_close(pf);
  moe_ckpt_layer_free(&L);
  moe_ckpt_close(ck);
  return 0;
}
