/* ckpt_writer.h — small writers of checkpoint files for the tests, byte for byte the way the
 * producing tools write them. Plain C99 (JSON by hand), no library calls; include it FIRST in a
 * translation unit (it asks for POSIX mkdtemp through _DEFAULT_SOURCE).
 *
 *   safetensors   huggingface/safetensors safetensors/src/tensor.rs (prepare, serialize; commit
 *                 24b0b28): u64 LE header length N, then N bytes of compact JSON (serde_json): the
 *                 "__metadata__" map first, then the tensors as {"dtype", "shape", "data_offsets"},
 *                 sorted by descending dtype (the order of its Dtype enum) and then by name, padded
 *                 with spaces to a multiple of 8 (N_LEN); the data in that order, back to back.
 *                 transformers' save_pretrained passes metadata={"format": "pt"}.
 *   index         transformers save_pretrained (modeling_utils.py): model.safetensors.index.json =
 *                 {"metadata": {"total_size": bytes of all tensors}, "weight_map": {name: shard}},
 *                 json.dumps(index, indent=2, sort_keys=True) + "\n"; shards are named
 *                 model-00001-of-00002.safetensors.
 *   config.json   transformers PretrainedConfig.to_json_string: json.dumps(indent=2,
 *                 sort_keys=True) + "\n" (Python's layout: lists one element a line, "key": value).
 *   GGUF          ggml-org/ggml docs/gguf.md (commit d99724f) and llama.cpp gguf-py/gguf/gguf_writer.py:
 *                 "GGUF", u32 version, u64 tensor count, u64 KV count, the KVs (gguf string = u64
 *                 length + bytes; u32 value type; value), the tensor infos (name, u32 n_dims,
 *                 u64 ne[n_dims] with ne[0] the contiguous dimension = the numpy shape reversed,
 *                 u32 ggml type, u64 offset from the data section, each a multiple of the alignment),
 *                 zero padding to general.alignment (default 32), then each tensor's bytes followed
 *                 by zero padding to the alignment (GGUFWriter.write_padding after every tensor).
 *                 general.architecture is the first KV (GGUFWriter.__init__ adds it). v2 and v3
 *                 have the same little-endian layout (v3 only "adds big-endian support"; v2 made the
 *                 counts u64), so a v2 file differs from a v3 file in the version field only.
 *   GGML blocks   ggml-org/ggml src/ggml-common.h and src/ggml-quants.c (dequantize_row_*): blocks of
 *                 32 elements along ne[0]. Q4_0 = {f16 d; u8 qs[16]}, element j = (qs[j] & 15) - 8,
 *                 element j + 16 = (qs[j] >> 4) - 8, times d. Q8_0 = {f16 d; i8 qs[32]}, qs[j] * d.
 *                 MXFP4 = {u8 e; u8 qs[16]}, nibbles as Q4_0, value kvalues_mxfp4[q] *
 *                 2^(e - 128) with kvalues_mxfp4 = 2 * e2m1 (GGML_E8M0_TO_FP32_HALF), i.e.
 *                 e2m1(q) * 2^(e - 127).
 *   ggml types    docs/gguf.md enum ggml_type: F32 0, F16 1, Q4_0 2, Q8_0 8, BF16 30, MXFP4 39.
 *   AWQ, GPTQ     packers after AutoAWQ awq/modules/linear/gemm.py (from_linear) and AutoGPTQ
 *                 auto_gptq/nn_modules/qlinear/qlinear_cuda.py (pack), as tests/test_import.c.
 *   gpt-oss       transformers integrations/mxfp4.py: *_blocks [.., rows, cols/32, 16] (byte b of a
 *                 block holds element 2b in its low nibble, 2b + 1 in its high nibble), *_scales
 *                 [.., rows, cols/32] e8m0; gate_up rows interleaved (gate i = row 2i, up i = 2i + 1).
 */
#ifndef MOE_CKPT_WRITER_H
#define MOE_CKPT_WRITER_H

#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* mkdtemp (POSIX.1-2008) under -std=c99/c11 */
#endif

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a growable byte buffer -------------------------------------------------------------------- */
typedef struct cw_buf {
  uint8_t *p;
  size_t n, cap;
} cw_buf;

static void cw_die(const char *what) {
  fprintf(stderr, "ckpt_writer: %s\n", what);
  exit(2);
}
static void *cw_alloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) cw_die("out of memory");
  return p;
}
static char *cw_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = (char *)cw_alloc(n);
  memcpy(d, s, n);
  return d;
}
static void cw_reserve(cw_buf *b, size_t extra) {
  if (b->n + extra <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->n + extra) cap *= 2;
  uint8_t *p = (uint8_t *)realloc(b->p, cap);
  if (!p) cw_die("out of memory");
  b->p = p, b->cap = cap;
}
static void cw_put(cw_buf *b, const void *src, size_t n) {
  cw_reserve(b, n);
  if (n) memcpy(b->p + b->n, src, n);
  b->n += n;
}
static void cw_zeros(cw_buf *b, size_t n) {
  cw_reserve(b, n);
  memset(b->p + b->n, 0, n);
  b->n += n;
}
static void cw_le(cw_buf *b, uint64_t v, int nbytes) { /* little-endian, whatever the host */
  uint8_t t[8];
  for (int i = 0; i < nbytes; i++) t[i] = (uint8_t)(v >> (8 * i));
  cw_put(b, t, (size_t)nbytes);
}
static void cw_printf(cw_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) cw_die("vsnprintf");
  cw_reserve(b, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf((char *)b->p + b->n, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)n;
}
static void cw_buf_free(cw_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* ---- a temporary directory whose files are removed with it -------------------------------------- */
typedef struct cw_dir {
  char path[512];
  char *files[256];
  int n_files;
} cw_dir;

/* mkdtemp under $TMPDIR (or /tmp); returns 0 on success */
static int cw_dir_make(cw_dir *d, const char *tag) {
  const char *base = getenv("TMPDIR");
  memset(d, 0, sizeof *d);
  if (!base || !*base) base = "/tmp";
  snprintf(d->path, sizeof d->path, "%s/moe-ckpt-%s-XXXXXX", base, tag);
  return mkdtemp(d->path) ? 0 : -1;
}
/* dir/name into out */
static const char *cw_dir_file(const cw_dir *d, const char *name, char *out, size_t n) {
  snprintf(out, n, "%s/%s", d->path, name);
  return out;
}
/* writes n bytes as dir/name (and remembers it for cw_dir_remove); returns 0 on success */
static int cw_dir_write(cw_dir *d, const char *name, const void *data, size_t n) {
  char path[768];
  FILE *f;
  int i, known = 0;
  cw_dir_file(d, name, path, sizeof path);
  f = fopen(path, "wb");
  if (!f) return -1;
  if (n && fwrite(data, 1, n, f) != n) {
    fclose(f);
    return -1;
  }
  if (fclose(f) != 0) return -1;
  for (i = 0; i < d->n_files; i++) known |= strcmp(d->files[i], name) == 0;
  if (!known && d->n_files < 256) d->files[d->n_files++] = cw_strdup(name);
  return 0;
}
static int cw_dir_write_buf(cw_dir *d, const char *name, const cw_buf *b) { return cw_dir_write(d, name, b->p, b->n); }
/* reads dir/name into a new buffer (NULL if it cannot) */
static uint8_t *cw_dir_read(const cw_dir *d, const char *name, size_t *n) {
  char path[768];
  FILE *f = fopen(cw_dir_file(d, name, path, sizeof path), "rb");
  long len;
  uint8_t *p;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  p = (uint8_t *)cw_alloc((size_t)len);
  if (len && fread(p, 1, (size_t)len, f) != (size_t)len) {
    fclose(f);
    free(p);
    return NULL;
  }
  fclose(f);
  *n = (size_t)len;
  return p;
}
static void cw_dir_unlink(cw_dir *d, const char *name) {
  char path[768];
  unlink(cw_dir_file(d, name, path, sizeof path));
}
static void cw_dir_remove(cw_dir *d) {
  for (int i = 0; i < d->n_files; i++) {
    cw_dir_unlink(d, d->files[i]);
    free(d->files[i]);
  }
  d->n_files = 0;
  if (d->path[0]) rmdir(d->path);
  d->path[0] = 0;
}

/* ---- JSON as Python's json.dumps(obj, indent=2, sort_keys=True) writes it ------------------------- */
enum { CW_J_RAW, CW_J_OBJ, CW_J_ARR };
typedef struct cw_json cw_json;
typedef struct cw_json_entry {
  char *key;
  int kind;
  char *raw;      /* CW_J_RAW: the value's JSON text (number, "string", true, null)            */
  cw_json *obj;   /* CW_J_OBJ                                                                  */
  char **items;   /* CW_J_ARR: JSON texts of the elements                                      */
  int n_items;
} cw_json_entry;
struct cw_json {
  cw_json_entry *e;
  int n, cap;
};

static cw_json *cw_json_new(void) {
  cw_json *o = (cw_json *)cw_alloc(sizeof *o);
  memset(o, 0, sizeof *o);
  return o;
}
static cw_json_entry *cw_json_add(cw_json *o, const char *key, int kind) {
  if (o->n == o->cap) {
    int cap = o->cap ? 2 * o->cap : 16;
    cw_json_entry *e = (cw_json_entry *)realloc(o->e, sizeof *e * (size_t)cap);
    if (!e) cw_die("out of memory");
    o->e = e, o->cap = cap;
  }
  cw_json_entry *x = &o->e[o->n++];
  memset(x, 0, sizeof *x);
  x->key = cw_strdup(key);
  x->kind = kind;
  return x;
}
/* a value given as JSON text, printf style: cw_json_raw(o, "hidden_size", "%d", 64) */
static void cw_json_raw(cw_json *o, const char *key, const char *fmt, ...) {
  va_list ap;
  char tmp[256];
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  cw_json_add(o, key, CW_J_RAW)->raw = cw_strdup(tmp);
}
static void cw_json_str(cw_json *o, const char *key, const char *s) { cw_json_raw(o, key, "\"%s\"", s); }
static void cw_json_obj(cw_json *o, const char *key, cw_json *child) { cw_json_add(o, key, CW_J_OBJ)->obj = child; }
/* an array of n JSON texts (copied) */
static void cw_json_arr(cw_json *o, const char *key, int n, const char *const *items) {
  cw_json_entry *x = cw_json_add(o, key, CW_J_ARR);
  x->items = (char **)cw_alloc(sizeof(char *) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) x->items[i] = cw_strdup(items[i]);
  x->n_items = n;
}
static void cw_json_free(cw_json *o) {
  if (!o) return;
  for (int i = 0; i < o->n; i++) {
    free(o->e[i].key);
    free(o->e[i].raw);
    cw_json_free(o->e[i].obj);
    for (int j = 0; j < o->e[i].n_items; j++) free(o->e[i].items[j]);
    free(o->e[i].items);
  }
  free(o->e);
  free(o);
}
static int cw_json_cmp(const void *a, const void *b) {
  return strcmp((*(const cw_json_entry *const *)a)->key, (*(const cw_json_entry *const *)b)->key);
}
static void cw_indent(cw_buf *b, int depth) {
  for (int i = 0; i < 2 * depth; i++) cw_put(b, " ", 1);
}
static void cw_json_dump_at(const cw_json *o, cw_buf *b, int depth) {
  const cw_json_entry **s;
  if (o->n == 0) {
    cw_printf(b, "{}");
    return;
  }
  s = (const cw_json_entry **)cw_alloc(sizeof *s * (size_t)o->n);
  for (int i = 0; i < o->n; i++) s[i] = &o->e[i];
  qsort(s, (size_t)o->n, sizeof *s, cw_json_cmp); /* sort_keys=True: code point order (ASCII keys) */
  cw_printf(b, "{\n");
  for (int i = 0; i < o->n; i++) {
    cw_indent(b, depth + 1);
    cw_printf(b, "\"%s\": ", s[i]->key);
    if (s[i]->kind == CW_J_RAW) cw_printf(b, "%s", s[i]->raw);
    else if (s[i]->kind == CW_J_OBJ) cw_json_dump_at(s[i]->obj, b, depth + 1);
    else if (s[i]->n_items == 0) cw_printf(b, "[]");
    else {
      cw_printf(b, "[\n");
      for (int j = 0; j < s[i]->n_items; j++) {
        cw_indent(b, depth + 2);
        cw_printf(b, "%s%s\n", s[i]->items[j], j + 1 < s[i]->n_items ? "," : "");
      }
      cw_indent(b, depth + 1);
      cw_printf(b, "]");
    }
    cw_printf(b, "%s\n", i + 1 < o->n ? "," : "");
  }
  cw_indent(b, depth);
  cw_printf(b, "}");
  free(s);
}
/* the whole document, with the trailing newline transformers adds */
static void cw_json_dump(const cw_json *o, cw_buf *b) {
  cw_json_dump_at(o, b, 0);
  cw_printf(b, "\n");
}

/* ---- safetensors ---------------------------------------------------------------------------------
 * dtypes in the order of safetensors' Dtype enum (a subset: F4, F6_*, F8_E8M0, the FNUZ types and C64
 * left out, the relative order kept), which is the sort key of the file's tensors (descending). */
typedef enum cw_st_dtype {
  CW_ST_BOOL, CW_ST_U8, CW_ST_I8, CW_ST_F8_E5M2, CW_ST_F8_E4M3, CW_ST_I16, CW_ST_U16, CW_ST_F16, CW_ST_BF16,
  CW_ST_I32, CW_ST_U32, CW_ST_F32, CW_ST_F64, CW_ST_I64, CW_ST_U64
} cw_st_dtype;
static const char *const cw_st_names[] = {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16",
                                          "BF16", "I32", "U32", "F32", "F64", "I64", "U64"};
static const size_t cw_st_sizes[] = {1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8};

typedef struct cw_st_tensor {
  char *name;
  cw_st_dtype dtype;
  int n_dims;
  int64_t shape[8];
  uint8_t *data;
  size_t bytes;
  int shard; /* 1-based shard of a sharded checkpoint; 1 for a single file */
} cw_st_tensor;

/* The tensors of a checkpoint (all its shards). */
typedef struct cw_st {
  cw_st_tensor *t;
  int n, cap;
} cw_st;

/* Adds a tensor (data copied: bytes = product(shape) * dtype size) to shard `shard`. */
static void cw_st_add(cw_st *s, int shard, const char *name, cw_st_dtype dtype, int n_dims, const int64_t *shape,
                      const void *data) {
  cw_st_tensor *t;
  size_t n = cw_st_sizes[dtype];
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 64;
    cw_st_tensor *p = (cw_st_tensor *)realloc(s->t, sizeof *p * (size_t)cap);
    if (!p) cw_die("out of memory");
    s->t = p, s->cap = cap;
  }
  t = &s->t[s->n++];
  memset(t, 0, sizeof *t);
  t->name = cw_strdup(name);
  t->dtype = dtype;
  t->n_dims = n_dims;
  for (int i = 0; i < n_dims; i++) t->shape[i] = shape[i], n *= (size_t)shape[i];
  t->bytes = n;
  t->data = (uint8_t *)cw_alloc(n);
  memcpy(t->data, data, n);
  t->shard = shard;
}
/* shape helpers */
static void cw_st_add1(cw_st *s, int shard, const char *name, cw_st_dtype dt, int64_t a, const void *data) {
  int64_t sh[1] = {a};
  cw_st_add(s, shard, name, dt, 1, sh, data);
}
static void cw_st_add2(cw_st *s, int shard, const char *name, cw_st_dtype dt, int64_t a, int64_t b, const void *data) {
  int64_t sh[2] = {a, b};
  cw_st_add(s, shard, name, dt, 2, sh, data);
}
static void cw_st_add3(cw_st *s, int shard, const char *name, cw_st_dtype dt, int64_t a, int64_t b, int64_t c,
                       const void *data) {
  int64_t sh[3] = {a, b, c};
  cw_st_add(s, shard, name, dt, 3, sh, data);
}
static void cw_st_add4(cw_st *s, int shard, const char *name, cw_st_dtype dt, int64_t a, int64_t b, int64_t c,
                       int64_t d, const void *data) {
  int64_t sh[4] = {a, b, c, d};
  cw_st_add(s, shard, name, dt, 4, sh, data);
}
/* Drops the tensor called name (for files that lack one); returns 1 if it was there. */
static int cw_st_remove(cw_st *s, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->t[i].name, name) == 0) {
      free(s->t[i].name);
      free(s->t[i].data);
      memmove(&s->t[i], &s->t[i + 1], sizeof *s->t * (size_t)(s->n - i - 1));
      s->n--;
      return 1;
    }
  return 0;
}
static void cw_st_free(cw_st *s) {
  for (int i = 0; i < s->n; i++) free(s->t[i].name), free(s->t[i].data);
  free(s->t);
  memset(s, 0, sizeof *s);
}
static int cw_st_order(const void *a, const void *b) { /* descending dtype, then name */
  const cw_st_tensor *x = *(const cw_st_tensor *const *)a, *y = *(const cw_st_tensor *const *)b;
  if (x->dtype != y->dtype) return x->dtype > y->dtype ? -1 : 1;
  return strcmp(x->name, y->name);
}
/* The file of shard `shard` (0: every tensor) into out. */
static void cw_st_serialize(const cw_st *s, int shard, cw_buf *out) {
  const cw_st_tensor **v = (const cw_st_tensor **)cw_alloc(sizeof *v * (size_t)(s->n ? s->n : 1));
  int n = 0;
  size_t off = 0, hlen;
  cw_buf h = {0, 0, 0};
  for (int i = 0; i < s->n; i++)
    if (shard == 0 || s->t[i].shard == shard) v[n++] = &s->t[i];
  qsort(v, (size_t)n, sizeof *v, cw_st_order);
  cw_printf(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
  for (int i = 0; i < n; i++) {
    cw_printf(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", v[i]->name, cw_st_names[v[i]->dtype]);
    for (int d = 0; d < v[i]->n_dims; d++) cw_printf(&h, "%s%lld", d ? "," : "", (long long)v[i]->shape[d]);
    cw_printf(&h, "],\"data_offsets\":[%zu,%zu]}", off, off + v[i]->bytes);
    off += v[i]->bytes;
  }
  cw_printf(&h, "}");
  hlen = (h.n + 7) / 8 * 8; /* next_multiple_of(N_LEN), filled with b' ' */
  while (h.n < hlen) cw_put(&h, " ", 1);
  cw_le(out, (uint64_t)hlen, 8);
  cw_put(out, h.p, h.n);
  for (int i = 0; i < n; i++) cw_put(out, v[i]->data, v[i]->bytes);
  cw_buf_free(&h);
  free(v);
}
static void cw_st_shard_name(int shard, int n_shards, char *out, size_t n) {
  snprintf(out, n, "model-%05d-of-%05d.safetensors", shard, n_shards);
}
/* Writes a checkpoint's tensors into d: model.safetensors (n_shards 1), or the shards and
 * model.safetensors.index.json. Returns 0 on success. */
static int cw_st_write(const cw_st *s, cw_dir *d, int n_shards) {
  cw_buf b = {0, 0, 0};
  int rc = 0;
  if (n_shards <= 1) {
    cw_st_serialize(s, 0, &b);
    rc = cw_dir_write_buf(d, "model.safetensors", &b);
    cw_buf_free(&b);
    return rc;
  }
  for (int k = 1; k <= n_shards && rc == 0; k++) {
    char name[64];
    cw_st_shard_name(k, n_shards, name, sizeof name);
    b.n = 0;
    cw_st_serialize(s, k, &b);
    rc = cw_dir_write_buf(d, name, &b);
  }
  if (rc == 0) {
    cw_json *idx = cw_json_new(), *meta = cw_json_new(), *map = cw_json_new();
    unsigned long long total = 0;
    for (int i = 0; i < s->n; i++) {
      char name[64];
      cw_st_shard_name(s->t[i].shard, n_shards, name, sizeof name);
      cw_json_str(map, s->t[i].name, name);
      total += s->t[i].bytes;
    }
    cw_json_raw(meta, "total_size", "%llu", total);
    cw_json_obj(idx, "metadata", meta);
    cw_json_obj(idx, "weight_map", map);
    b.n = 0;
    cw_json_dump(idx, &b);
    rc = cw_dir_write_buf(d, "model.safetensors.index.json", &b);
    cw_json_free(idx);
  }
  cw_buf_free(&b);
  return rc;
}
/* config.json from a JSON object */
static int cw_write_config(cw_dir *d, const cw_json *cfg) {
  cw_buf b = {0, 0, 0};
  int rc;
  cw_json_dump(cfg, &b);
  rc = cw_dir_write_buf(d, "config.json", &b);
  cw_buf_free(&b);
  return rc;
}

/* ---- GGUF ----------------------------------------------------------------------------------------- */
enum { /* ggml_type (docs/gguf.md) */
  CW_GGML_F32 = 0, CW_GGML_F16 = 1, CW_GGML_Q4_0 = 2, CW_GGML_Q8_0 = 8, CW_GGML_BF16 = 30, CW_GGML_MXFP4 = 39
};
enum { /* gguf_metadata_value_type */
  CW_GV_UINT8 = 0, CW_GV_INT8 = 1, CW_GV_UINT16 = 2, CW_GV_INT16 = 3, CW_GV_UINT32 = 4, CW_GV_INT32 = 5,
  CW_GV_FLOAT32 = 6, CW_GV_BOOL = 7, CW_GV_STRING = 8, CW_GV_ARRAY = 9, CW_GV_UINT64 = 10, CW_GV_INT64 = 11,
  CW_GV_FLOAT64 = 12
};
/* ExpertGatingFuncType (gguf-py constants.py): softmax 1, sigmoid 2 */
enum { CW_GATING_SOFTMAX = 1, CW_GATING_SIGMOID = 2 };
/* llama_ftype (llama.h) for general.file_type */
enum { CW_FTYPE_ALL_F32 = 0, CW_FTYPE_MOSTLY_F16 = 1, CW_FTYPE_MOSTLY_Q4_0 = 2, CW_FTYPE_MOSTLY_Q8_0 = 7,
       CW_FTYPE_MOSTLY_BF16 = 32, CW_FTYPE_MOSTLY_MXFP4_MOE = 38 };

typedef struct cw_gguf_tensor {
  char *name;
  uint32_t type;
  int n_dims;
  uint64_t ne[4]; /* ne[0] contiguous */
  uint8_t *data;
  size_t bytes;
} cw_gguf_tensor;

typedef struct cw_gguf {
  char arch[32];
  uint32_t version, alignment;
  cw_buf kv;
  uint64_t n_kv;
  cw_gguf_tensor *t;
  int n, cap;
} cw_gguf;

static void cw_gguf_string(cw_buf *b, const char *s) {
  size_t n = strlen(s);
  cw_le(b, (uint64_t)n, 8);
  cw_put(b, s, n);
}
static void cw_gguf_key(cw_gguf *g, const char *key, uint32_t type) {
  cw_gguf_string(&g->kv, key);
  cw_le(&g->kv, type, 4);
  g->n_kv++;
}
static void cw_gguf_kv_u32(cw_gguf *g, const char *key, uint32_t v) {
  cw_gguf_key(g, key, CW_GV_UINT32);
  cw_le(&g->kv, v, 4);
}
static void cw_gguf_kv_f32(cw_gguf *g, const char *key, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  cw_gguf_key(g, key, CW_GV_FLOAT32);
  cw_le(&g->kv, u, 4);
}
static void cw_gguf_kv_bool(cw_gguf *g, const char *key, int v) {
  cw_gguf_key(g, key, CW_GV_BOOL);
  cw_le(&g->kv, v ? 1u : 0u, 1);
}
static void cw_gguf_kv_str(cw_gguf *g, const char *key, const char *v) {
  cw_gguf_key(g, key, CW_GV_STRING);
  cw_gguf_string(&g->kv, v);
}
/* "<arch>.<suffix>" keys */
static const char *cw_gguf_akey(const cw_gguf *g, const char *suffix, char *buf, size_t n) {
  snprintf(buf, n, "%s.%s", g->arch, suffix);
  return buf;
}
static void cw_gguf_arch_u32(cw_gguf *g, const char *suffix, uint32_t v) {
  char k[128];
  cw_gguf_kv_u32(g, cw_gguf_akey(g, suffix, k, sizeof k), v);
}
static void cw_gguf_arch_f32(cw_gguf *g, const char *suffix, float v) {
  char k[128];
  cw_gguf_kv_f32(g, cw_gguf_akey(g, suffix, k, sizeof k), v);
}
static void cw_gguf_arch_bool(cw_gguf *g, const char *suffix, int v) {
  char k[128];
  cw_gguf_kv_bool(g, cw_gguf_akey(g, suffix, k, sizeof k), v);
}

/* A writer for architecture arch, format version (2 or 3); general.architecture is the first KV. */
static void cw_gguf_init(cw_gguf *g, const char *arch, uint32_t version) {
  memset(g, 0, sizeof *g);
  snprintf(g->arch, sizeof g->arch, "%s", arch);
  g->version = version;
  g->alignment = 32; /* GGUF_DEFAULT_ALIGNMENT */
  cw_gguf_kv_str(g, "general.architecture", arch);
}
/* general.alignment (GGUFWriter.add_custom_alignment): the KV, and the alignment the file uses */
static void cw_gguf_alignment(cw_gguf *g, uint32_t a) {
  cw_gguf_kv_u32(g, "general.alignment", a);
  g->alignment = a;
}

/* bytes of a row of ne0 elements of a ggml type */
static size_t cw_ggml_row_bytes(uint32_t type, uint64_t ne0) {
  switch (type) {
  case CW_GGML_F32: return (size_t)ne0 * 4;
  case CW_GGML_F16:
  case CW_GGML_BF16: return (size_t)ne0 * 2;
  case CW_GGML_Q4_0: return (size_t)(ne0 / 32) * 18;
  case CW_GGML_Q8_0: return (size_t)(ne0 / 32) * 34;
  case CW_GGML_MXFP4: return (size_t)(ne0 / 32) * 17;
  default: cw_die("unknown ggml type"); return 0;
  }
}
/* A tensor of shape `shape` in numpy order (the last dimension contiguous; stored reversed as ne[])
 * and ggml type; data (copied) holds its rows back to back in that type's layout. */
static void cw_gguf_tensor_add(cw_gguf *g, const char *name, uint32_t type, int n_dims, const int64_t *shape,
                               const void *data) {
  cw_gguf_tensor *t;
  size_t rows = 1;
  if (g->n == g->cap) {
    int cap = g->cap ? 2 * g->cap : 64;
    cw_gguf_tensor *p = (cw_gguf_tensor *)realloc(g->t, sizeof *p * (size_t)cap);
    if (!p) cw_die("out of memory");
    g->t = p, g->cap = cap;
  }
  t = &g->t[g->n++];
  memset(t, 0, sizeof *t);
  t->name = cw_strdup(name);
  t->type = type;
  t->n_dims = n_dims;
  for (int i = 0; i < n_dims; i++) t->ne[i] = (uint64_t)shape[n_dims - 1 - i];
  for (int i = 1; i < n_dims; i++) rows *= (size_t)t->ne[i];
  t->bytes = rows * cw_ggml_row_bytes(type, t->ne[0]);
  t->data = (uint8_t *)cw_alloc(t->bytes);
  memcpy(t->data, data, t->bytes);
}
static void cw_gguf_tensor1(cw_gguf *g, const char *name, uint32_t type, int64_t a, const void *data) {
  int64_t s[1] = {a};
  cw_gguf_tensor_add(g, name, type, 1, s, data);
}
static void cw_gguf_tensor2(cw_gguf *g, const char *name, uint32_t type, int64_t a, int64_t b, const void *data) {
  int64_t s[2] = {a, b};
  cw_gguf_tensor_add(g, name, type, 2, s, data);
}
static void cw_gguf_tensor3(cw_gguf *g, const char *name, uint32_t type, int64_t a, int64_t b, int64_t c,
                            const void *data) {
  int64_t s[3] = {a, b, c};
  cw_gguf_tensor_add(g, name, type, 3, s, data);
}
static int cw_gguf_remove(cw_gguf *g, const char *name) {
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->t[i].name, name) == 0) {
      free(g->t[i].name);
      free(g->t[i].data);
      memmove(&g->t[i], &g->t[i + 1], sizeof *g->t * (size_t)(g->n - i - 1));
      g->n--;
      return 1;
    }
  return 0;
}
static void cw_gguf_free(cw_gguf *g) {
  for (int i = 0; i < g->n; i++) free(g->t[i].name), free(g->t[i].data);
  free(g->t);
  cw_buf_free(&g->kv);
  memset(g, 0, sizeof *g);
}
static size_t cw_pad_to(size_t x, size_t a) { return (x + a - 1) / a * a; } /* GGUFWriter.ggml_pad */
static void cw_gguf_serialize(const cw_gguf *g, cw_buf *out) {
  uint64_t off = 0;
  cw_put(out, "GGUF", 4); /* GGUF_MAGIC 0x46554747 written "<I" */
  cw_le(out, g->version, 4);
  cw_le(out, (uint64_t)g->n, 8);
  cw_le(out, g->n_kv, 8);
  cw_put(out, g->kv.p, g->kv.n);
  for (int i = 0; i < g->n; i++) {
    const cw_gguf_tensor *t = &g->t[i];
    cw_gguf_string(out, t->name);
    cw_le(out, (uint64_t)t->n_dims, 4);
    for (int d = 0; d < t->n_dims; d++) cw_le(out, t->ne[d], 8);
    cw_le(out, t->type, 4);
    cw_le(out, off, 8);
    off += cw_pad_to(t->bytes, g->alignment);
  }
  cw_zeros(out, cw_pad_to(out->n, g->alignment) - out->n);
  for (int i = 0; i < g->n; i++) {
    cw_put(out, g->t[i].data, g->t[i].bytes);
    cw_zeros(out, cw_pad_to(g->t[i].bytes, g->alignment) - g->t[i].bytes);
  }
}
static int cw_gguf_write(const cw_gguf *g, cw_dir *d, const char *name) {
  cw_buf b = {0, 0, 0};
  int rc;
  cw_gguf_serialize(g, &b);
  rc = cw_dir_write_buf(d, name, &b);
  cw_buf_free(&b);
  return rc;
}

/* ---- GGML blocks (ggml-common.h) from codes ------------------------------------------------------- */
/* Q4_0: d (f16 bits), q[32] codes 0..15 (value (q - 8) * d) */
static void cw_block_q4_0(uint8_t out[18], uint16_t d, const uint8_t q[32]) {
  out[0] = (uint8_t)d, out[1] = (uint8_t)(d >> 8);
  for (int j = 0; j < 16; j++) out[2 + j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
}
/* Q8_0: d (f16 bits), q[32] int8 (value q * d) */
static void cw_block_q8_0(uint8_t out[34], uint16_t d, const int8_t q[32]) {
  out[0] = (uint8_t)d, out[1] = (uint8_t)(d >> 8);
  memcpy(out + 2, q, 32);
}
/* MXFP4: e (e8m0), q[32] e2m1 codes */
static void cw_block_mxfp4(uint8_t out[17], uint8_t e, const uint8_t q[32]) {
  out[0] = e;
  for (int j = 0; j < 16; j++) out[1 + j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
}

/* ---- the int4 checkpoint packers ------------------------------------------------------------------ */
/* One linear layer of out x in features: codes q[out][in] (0..15), zero points z[out][ng] and scale
 * bits sc[out][ng] (f16) with ng = in / group. */

/* AutoAWQ WQLinear_GEMM.from_linear (version "gemm"): qweight [in][out/8] int32 with
 * qweight[:, c] |= intweight[:, 8c + order_map[i]] << 4i, order_map = [0, 2, 4, 6, 1, 3, 5, 7];
 * qzeros [in/group][out/8] the same from the zeros; scales [in/group][out] (f16). */
static void cw_awq_pack(int64_t out, int64_t in, int64_t group, const uint8_t *q, const uint8_t *z,
                        const uint16_t *sc, uint32_t *qweight, uint32_t *qzeros, uint16_t *scales) {
  static const int order_map[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  const int64_t wpr = out / 8, ng = in / group;
  memset(qweight, 0, sizeof(uint32_t) * (size_t)(in * wpr));
  memset(qzeros, 0, sizeof(uint32_t) * (size_t)(ng * wpr));
  for (int64_t i = 0; i < in; i++)
    for (int64_t c = 0; c < wpr; c++)
      for (int p = 0; p < 8; p++) qweight[i * wpr + c] |= (uint32_t)q[(c * 8 + order_map[p]) * in + i] << (4 * p);
  for (int64_t g = 0; g < ng; g++)
    for (int64_t c = 0; c < wpr; c++)
      for (int p = 0; p < 8; p++) qzeros[g * wpr + c] |= (uint32_t)z[(c * 8 + order_map[p]) * ng + g] << (4 * p);
  for (int64_t g = 0; g < ng; g++)
    for (int64_t o = 0; o < out; o++) scales[g * out + o] = sc[o * ng + g];
}

/* AutoGPTQ QuantLinear.pack (4 bits, checkpoint_format "gptq", i.e. v1): qweight [in/8][out] int32
 * with row r |= intweight[8r + j] << 4j; `zeros -= 1` and qzeros [ng][out/8] with column c |=
 * zeros[:, 8c + j] << 4j (so zero points 1..15); scales [ng][out]; g_idx [in] written by the caller
 * (i // group, the buffer QuantLinear registers). v2: GPTQModel's checkpoint_format "gptq_v2"
 * (gptqmodel/quantization/config.py FORMAT.GPTQ_V2) stores the zero points as they are (0..15). */
static void cw_gptq_pack(int64_t out, int64_t in, int64_t group, const uint8_t *q, const uint8_t *z,
                         const uint16_t *sc, uint32_t *qweight, uint32_t *qzeros, uint16_t *scales, int v2) {
  const int64_t wpr = out / 8, ng = (in + group - 1) / group;
  memset(qweight, 0, sizeof(uint32_t) * (size_t)(in / 8 * out));
  memset(qzeros, 0, sizeof(uint32_t) * (size_t)(ng * wpr));
  for (int64_t r = 0; r < in / 8; r++)
    for (int64_t o = 0; o < out; o++)
      for (int j = 0; j < 8; j++) qweight[r * out + o] |= (uint32_t)q[o * in + 8 * r + j] << (4 * j);
  for (int64_t g = 0; g < ng; g++)
    for (int64_t c = 0; c < wpr; c++)
      for (int j = 0; j < 8; j++) qzeros[g * wpr + c] |= (uint32_t)((z[(8 * c + j) * ng + g] - (v2 ? 0 : 1)) & 15) << (4 * j);
  for (int64_t g = 0; g < ng; g++)
    for (int64_t o = 0; o < out; o++) scales[g * out + o] = sc[o * ng + g];
}

#endif /* MOE_CKPT_WRITER_H */
