/* bench_load — loading a model's MoE layers: a synthetic Qwen3-MoE-shaped bf16 checkpoint written by
 * the test writer (tests/ckpt_writer.h: safetensors shards, config.json), then, from a warm page cache:
 *
 *   memcpy     the checkpoint's bytes copied once from the page cache (the yardstick; mapping and
 *              page faults of the mapping included, as a loader has them), into memory written before;
 *              and again into fresh memory (memcpy_fresh: its page faults too, as a loader has them)
 *   first      every layer read straight into packed experts (moe_ckpt_load_layer_packed: one expert at
 *              a time per thread, packed into place); with --two-pass, read and imported
 *              (moe_ckpt_load_layer_parallel), then packed (moe_pack_parallel)
 *   write      the packed layers into one packed file (moe_packfile_write; not part of "first")
 *   reopen     the packed file mapped and every router read (moe_packfile_open, moe_ckpt_load_router)
 *   calls      layer 0 at M tokens on the freshly packed experts and on the mapped ones: one warm-up
 *              call each (the mapped pages fault in there), then the median of --runs calls
 *
 *   bench_load [--layers L] [--experts E] [--n N] [--k K] [--topk k] [--threads T] [--m M] [--runs R] [--dir D]
 *              [--two-pass]
 *
 * Defaults: Qwen3-30B-A3B's MoE shape (E 128, N 768, K 2048, top-8), 4 layers (4.8 GB), all threads,
 * M 32. One JSON line ("bench":"load") on stdout, a table on stderr. The checkpoint and the packed
 * file go to a new directory under /tmp (or --dir) and are removed at the end. */
#define _POSIX_C_SOURCE 200809L
#include "ckpt_writer.h" /* first: it asks for POSIX (mkdtemp) */
#include "bench_common.h"
#include "bench_pool.h"
#define MOE_CHECKPOINT_IMPLEMENTATION
#include "../moe_checkpoint.h"
#include "../moe_packfile.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct options {
  int64_t layers, E, N, K, M;
  int topk, threads, runs, two_pass;
  const char *dir;
} options;

/* config.json of a qwen3_moe model of o's shape (the keys transformers' Qwen3MoeConfig writes). */
static cw_json *config_of(const options *o) {
  cw_json *c = cw_json_new();
  const char *arch[1] = {"\"Qwen3MoeForCausalLM\""};
  cw_json_arr(c, "architectures", 1, arch);
  cw_json_str(c, "model_type", "qwen3_moe");
  cw_json_raw(c, "hidden_size", "%lld", (long long)o->K);
  cw_json_raw(c, "num_hidden_layers", "%lld", (long long)o->layers);
  cw_json_raw(c, "num_experts_per_tok", "%d", o->topk);
  cw_json_raw(c, "num_experts", "%lld", (long long)o->E);
  cw_json_raw(c, "moe_intermediate_size", "%lld", (long long)o->N);
  cw_json_raw(c, "intermediate_size", "%lld", (long long)(3 * o->N));
  cw_json_raw(c, "norm_topk_prob", "true");
  cw_json_raw(c, "decoder_sparse_step", "1");
  cw_json_arr(c, "mlp_only_layers", 0, NULL);
  cw_json_str(c, "hidden_act", "silu");
  cw_json_raw(c, "torch_dtype", "\"bfloat16\"");
  cw_json_raw(c, "vocab_size", "151936");
  cw_json_raw(c, "num_attention_heads", "32");
  cw_json_raw(c, "num_key_value_heads", "4");
  cw_json_raw(c, "head_dim", "128");
  cw_json_raw(c, "rms_norm_eps", "1e-06");
  return c;
}

/* Random bf16 weights (|w| < 0.06, no Inf or NaN) for one [rows][cols] matrix. */
static uint16_t *bf16_matrix(kit_rng *r, int64_t rows, int64_t cols) {
  uint16_t *w = (uint16_t *)kit_malloc((size_t)(rows * cols) * 2);
  for (int64_t i = 0; i < rows * cols; i++) w[i] = moe_f32_to_bf16((float)(0.02 * kit_normal(r)));
  return w;
}

/* Writes the checkpoint: layer l's tensors in shard l + 1 (one copy of each projection's random
 * matrix for every expert: what is timed does not depend on the values). Returns its bytes. */
static size_t write_checkpoint(const options *o, cw_dir *d) {
  kit_rng r = kit_rng_stream(7, 1);
  uint16_t *gate = bf16_matrix(&r, o->N, o->K), *up = bf16_matrix(&r, o->N, o->K), *down = bf16_matrix(&r, o->K, o->N);
  uint16_t *router = bf16_matrix(&r, o->E, o->K);
  cw_st s;
  cw_json *cfg = config_of(o);
  size_t bytes = 0;
  memset(&s, 0, sizeof s);
  for (int64_t l = 0; l < o->layers; l++) {
    char name[128];
    snprintf(name, sizeof name, "model.layers.%lld.mlp.gate.weight", (long long)l);
    cw_st_add2(&s, (int)l + 1, name, CW_ST_BF16, o->E, o->K, router);
    for (int64_t e = 0; e < o->E; e++) {
      snprintf(name, sizeof name, "model.layers.%lld.mlp.experts.%lld.gate_proj.weight", (long long)l, (long long)e);
      cw_st_add2(&s, (int)l + 1, name, CW_ST_BF16, o->N, o->K, gate);
      snprintf(name, sizeof name, "model.layers.%lld.mlp.experts.%lld.up_proj.weight", (long long)l, (long long)e);
      cw_st_add2(&s, (int)l + 1, name, CW_ST_BF16, o->N, o->K, up);
      snprintf(name, sizeof name, "model.layers.%lld.mlp.experts.%lld.down_proj.weight", (long long)l, (long long)e);
      cw_st_add2(&s, (int)l + 1, name, CW_ST_BF16, o->K, o->N, down);
    }
  }
  for (int i = 0; i < s.n; i++) bytes += s.t[i].bytes;
  if (cw_st_write(&s, d, (int)o->layers) != 0 || cw_write_config(d, cfg) != 0) die("cannot write the checkpoint");
  cw_st_free(&s);
  cw_json_free(cfg);
  free(gate), free(up), free(down), free(router);
  return bytes;
}

/* Seconds to copy every shard's bytes once from the page cache (mapped) into a buffer already
 * written once, after one pass that brings them there; with fresh, into a buffer allocated for each
 * shard and never touched before (its page faults timed, as a loader that copies has them). */
static double memcpy_shards(const options *o, const cw_dir *d, int fresh) {
  double best = 0;
  size_t cap = 0;
  uint8_t *dst = NULL;
  volatile uint8_t sink = 0;
  for (int pass = 0; pass < 2; pass++) {
    double t = 0;
    for (int64_t l = 0; l < o->layers; l++) {
      char name[64], path[4096];
      struct stat st;
      double t0;
      int fd;
      void *p;
      if (o->layers > 1) cw_st_shard_name((int)l + 1, (int)o->layers, name, sizeof name);
      else snprintf(name, sizeof name, "model.safetensors"); /* cw_st_write: one file, unsharded */
      cw_dir_file(d, name, path, sizeof path);
      if ((fd = open(path, O_RDONLY)) < 0 || fstat(fd, &st) != 0) die("cannot open %s", path);
      p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
      close(fd);
      if (p == MAP_FAILED) die("cannot map %s", path);
      if ((size_t)st.st_size > cap && !fresh) {
        free(dst);
        cap = (size_t)st.st_size, dst = (uint8_t *)kit_malloc(cap);
        memset(dst, 1, cap);
      }
      t0 = now_s();
      if (fresh) dst = (uint8_t *)kit_malloc((size_t)st.st_size);
      memcpy(dst, p, (size_t)st.st_size);
      t += now_s() - t0;
      sink ^= dst[(size_t)st.st_size / 2];
      if (fresh) free(dst), dst = NULL;
      munmap(p, (size_t)st.st_size);
    }
    best = t;
  }
  (void)sink;
  free(dst);
  return best;
}

/* Median milliseconds of runs calls of layer L on ex (after one warm-up call, whose time goes to
 * *first_ms). */
static double time_calls(const options *o, const moe_ckpt_layer *L, const moe_experts *ex, bench_pool *pool, double *first_ms) {
  const int64_t M = o->M, K = L->experts.K;
  float *x = (float *)kit_malloc((size_t)(M * K) * 4), *out = (float *)kit_malloc((size_t)(M * K) * 4);
  float *logits = (float *)kit_malloc((size_t)(M * L->router.E) * 4);
  double ms[64];
  moe_call c;
  moe_parallel par = {pool_parallel_for, pool, o->threads};
  size_t ws_size = 0;
  void *ws;
  kit_rng r = kit_rng_stream(7, 2);
  for (int64_t i = 0; i < M * K; i++) x[i] = (float)kit_normal(&r);
  memset(&c, 0, sizeof c);
  c.x = x, c.out = out, c.dtype = MOE_F32, c.M = M, c.topk = L->router.topk, c.act = L->act;
  if (moe_forward_workspace_size(ex, &L->router, &c, &ws_size) != MOE_OK) die("moe_forward_workspace_size failed");
  ws = kit_malloc(ws_size ? ws_size : 1);
  moe_ckpt_router_logits(L, x, M, logits);
  for (int i = 0; i <= o->runs; i++) {
    double t0 = now_s();
    if (moe_forward(ex, &L->router, logits, MOE_F32, &c, ws, ws_size, &par) != MOE_OK) die("moe_forward failed");
    if (i == 0) *first_ms = (now_s() - t0) * 1e3;
    else ms[i - 1] = (now_s() - t0) * 1e3;
  }
  free(x), free(out), free(logits), free(ws);
  return stats_of(ms, o->runs).median;
}

int main(int argc, char **argv) {
  options o = {4, 128, 768, 2048, 32, 8, (int)sysconf(_SC_NPROCESSORS_ONLN), 5, 0, NULL};
  cw_dir d;
  moe_ckpt *ck;
  moe_ckpt_error err;
  moe_ckpt_layer *L;
  moe_experts *ex, *mapped;
  void **bufs;
  moe_packfile_entry *ent;
  moe_packfile *pf;
  moe_packfile_error perr;
  char (*names)[64], pack_path[4096];
  double t0, t_load = 0, t_pack = 0, t_write, t_reopen, t_copy, t_copy_fresh, call_fresh, call_mapped, first_fresh, first_mapped;
  size_t ckpt_bytes, packed_bytes = 0;
  bench_pool *pool;
  bench_prog = "bench_load";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--two-pass")) {
      o.two_pass = 1;
      continue;
    }
    if (!v) die("usage: bench_load [--layers L] [--experts E] [--n N] [--k K] [--topk k] [--threads T] [--m M] [--runs R] [--dir D] [--two-pass]");
    if (!strcmp(a, "--layers")) o.layers = atoll(v);
    else if (!strcmp(a, "--experts")) o.E = atoll(v);
    else if (!strcmp(a, "--n")) o.N = atoll(v);
    else if (!strcmp(a, "--k")) o.K = atoll(v);
    else if (!strcmp(a, "--topk")) o.topk = atoi(v);
    else if (!strcmp(a, "--threads")) o.threads = atoi(v);
    else if (!strcmp(a, "--m")) o.M = atoll(v);
    else if (!strcmp(a, "--runs")) o.runs = atoi(v);
    else if (!strcmp(a, "--dir")) o.dir = v;

    else die("unknown option %s", a);
    i++;
  }
  if (o.layers < 1 || o.E < 1 || o.N < 32 || o.K < 32 || o.topk < 1 || o.topk > o.E || o.threads < 1 || o.M < 1 ||
      o.runs < 1 || o.runs > 64)
    die("bad option value");
  if (o.dir && setenv("TMPDIR", o.dir, 1) != 0) die("cannot use --dir");
  if (cw_dir_make(&d, "bench_load") != 0) die("cannot make a directory for the checkpoint");
  fprintf(stderr, "bench_load: %lld layers, E %lld, N %lld, K %lld, bf16, %d threads, in %s\n", (long long)o.layers,
          (long long)o.E, (long long)o.N, (long long)o.K, o.threads, d.path);
  ckpt_bytes = write_checkpoint(&o, &d);
  sync(); /* the page cache clean: no writeback of the checkpoint runs under what is timed */
  t_copy = memcpy_shards(&o, &d, 0);
  pool = pool_create(o.threads);

  /* first load: read and import, pack */
  L = (moe_ckpt_layer *)calloc((size_t)o.layers, sizeof *L), ex = (moe_experts *)calloc((size_t)o.layers, sizeof *ex);
  mapped = (moe_experts *)calloc((size_t)o.layers, sizeof *mapped), bufs = (void **)calloc((size_t)o.layers, sizeof *bufs);
  ent = (moe_packfile_entry *)calloc((size_t)o.layers, sizeof *ent), names = (char (*)[64])calloc((size_t)o.layers, 64);
  if (!L || !ex || !mapped || !bufs || !ent || !names) die("out of memory");
  t0 = now_s();
  if (moe_ckpt_open(d.path, &ck, &err) != MOE_OK) die("moe_ckpt_open: %s", err.msg);
  t_load += now_s() - t0;
  for (int64_t l = 0; l < o.layers; l++) {
    moe_parallel par = {pool_parallel_for, pool, o.threads};
    size_t n;
    double t = now_s();
    if (!o.two_pass) { /* the layer owns the packed experts */
      moe_experts shared;
      if (moe_ckpt_load_layer_packed(ck, l, MOE_PREC_BF16, &L[l], &ex[l], &shared, &err, &par) != MOE_OK)
        die("moe_ckpt_load_layer_packed: %s", err.msg);
      t_load += now_s() - t;
      packed_bytes += (size_t)(ex[l].E * ex[l].panels13) * ex[l].panel13_bytes + (size_t)(ex[l].E * ex[l].panels2) * ex[l].panel2_bytes;
    } else {
      if (moe_ckpt_load_layer_parallel(ck, l, MOE_PREC_BF16, &L[l], &err, &par) != MOE_OK) die("moe_ckpt_load_layer_parallel: %s", err.msg);
      t_load += now_s() - t;
      t = now_s();
      n = moe_pack_size(&L[l].experts);
      bufs[l] = kit_malloc(n);
      if (moe_pack_parallel(&L[l].experts, &ex[l], bufs[l], n, &par) != MOE_OK) die("moe_pack_parallel failed");
      t_pack += now_s() - t;
      packed_bytes += n;
    }
    snprintf(names[l], 64, "layer.%lld.experts", (long long)l);
    ent[l].name = names[l], ent[l].experts = &ex[l];
  }
  cw_dir_file(&d, "model.moepack", pack_path, sizeof pack_path);
  t0 = now_s();
  if (moe_packfile_write(pack_path, ent, (int)o.layers, &perr) != MOE_OK) die("moe_packfile_write: %s", perr.msg);
  t_write = now_s() - t0;
  sync(); /* as for the checkpoint: the packed file's writeback done before the calls and the reopen */
  call_fresh = time_calls(&o, &L[0], &ex[0], pool, &first_fresh);
  for (int64_t l = 0; l < o.layers; l++) free(bufs[l]), moe_ckpt_layer_free(&L[l]);
  moe_ckpt_close(ck);

  /* reopen: the packed file mapped, the routers read */
  t0 = now_s();
  if (moe_ckpt_open(d.path, &ck, &err) != MOE_OK) die("moe_ckpt_open: %s", err.msg);
  if (moe_packfile_open(pack_path, &pf, &perr) != MOE_OK) die("moe_packfile_open: %s", perr.msg);
  for (int64_t l = 0; l < o.layers; l++) {
    const moe_experts *e = moe_packfile_find(pf, names[l]);
    if (moe_ckpt_load_router(ck, l, MOE_PREC_BF16, &L[l], &err) != MOE_OK) die("moe_ckpt_load_router: %s", err.msg);
    if (!e) die("%s missing from the packed file", names[l]);
    mapped[l] = *e;
  }
  t_reopen = now_s() - t0;
  call_mapped = time_calls(&o, &L[0], &mapped[0], pool, &first_mapped);

  /* last: a pass of fresh pages before the first load made that load up to 2x slower here */
  t_copy_fresh = memcpy_shards(&o, &d, 1);
  {
    const double first = t_load + t_pack;
    json j;
    json_begin(&j);
    json_str(&j, "bench", "load"), json_str(&j, "precision", "bf16"), json_str(&j, "method", o.two_pass ? "two-pass" : "packed");
    json_int(&j, "layers", o.layers), json_int(&j, "experts", o.E), json_int(&j, "N", o.N), json_int(&j, "K", o.K);
    json_int(&j, "threads", o.threads), json_int(&j, "M", o.M);
    json_num(&j, "ckpt_gb", (double)ckpt_bytes / 1e9), json_num(&j, "packed_gb", (double)packed_bytes / 1e9);
    json_num(&j, "memcpy_ms", t_copy * 1e3), json_num(&j, "load_ms", t_load * 1e3), json_num(&j, "pack_ms", t_pack * 1e3);
    json_num(&j, "first_ms", first * 1e3), json_num(&j, "first_over_memcpy", first / t_copy);
    json_num(&j, "memcpy_fresh_ms", t_copy_fresh * 1e3), json_num(&j, "first_over_memcpy_fresh", first / t_copy_fresh);
    json_num(&j, "write_ms", t_write * 1e3), json_num(&j, "reopen_ms", t_reopen * 1e3);
    json_num(&j, "reopen_speedup", first / t_reopen);
    json_num(&j, "call_fresh_ms", call_fresh), json_num(&j, "call_mapped_ms", call_mapped);
    json_num(&j, "warmup_fresh_ms", first_fresh), json_num(&j, "warmup_mapped_ms", first_mapped);
    json_num(&j, "mapped_over_fresh", call_mapped / call_fresh);
    json_end(&j);
    fprintf(stderr,
            "  checkpoint %.2f GB: memcpy %.0f ms (into fresh memory: %.0f ms)\n"
            "  first load: read and import %.0f ms + pack %.0f ms = %.0f ms (%.2f x memcpy, %.2f x into fresh memory)\n"
            "  write packed %.0f ms; reopen (map + routers) %.1f ms: %.0f x faster than the first load\n"
            "  layer 0 at M %lld: fresh %.2f ms (warm-up %.2f), mapped %.2f ms (warm-up %.2f): %.3f x\n",
            (double)ckpt_bytes / 1e9, t_copy * 1e3, t_copy_fresh * 1e3, t_load * 1e3, t_pack * 1e3, first * 1e3, first / t_copy,
            first / t_copy_fresh, t_write * 1e3,
            t_reopen * 1e3, first / t_reopen, (long long)o.M, call_fresh, first_fresh, call_mapped, first_mapped,
            call_mapped / call_fresh);
  }
  for (int64_t l = 0; l < o.layers; l++) moe_ckpt_layer_free(&L[l]);
  moe_packfile_close(pf);
  moe_ckpt_close(ck);
  pool_destroy(pool);
  unlink(pack_path);
  cw_dir_remove(&d);
  free(L), free(ex), free(mapped), free(bufs), free(ent), free(names);
  return 0;
}
