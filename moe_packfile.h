/* moe_packfile.h — packed experts written once and mapped back: a versioned file of moe_experts
 * (any number of named entries, e.g. every MoE layer of a model) whose panels `mmap` hands to the
 * kernels as they lie, with no copy and no repack, shared between processes through the page cache.
 *
 * Not part of moe.h: this header does file I/O (POSIX open/mmap/write). In exactly one file (POSIX:
 * _POSIX_C_SOURCE 200809L or a gnu mode):
 *     #define MOE_PACKFILE_IMPLEMENTATION
 *     #define MOE_IMPLEMENTATION     (the implementation checks entries against moe_pack's plan)
 *     #include "moe_packfile.h"        (includes moe.h); or link libmoe, which holds both
 *
 *   moe_packfile_entry e[2] = {{"layer.1.experts", &ex1}, {"layer.1.shared", &sh1}};
 *   moe_packfile_write("model.moepack", e, 2, &err);          // once, after moe_pack
 *   moe_packfile *pf; moe_packfile_open("model.moepack", &pf, &err);
 *   const moe_experts *ex = moe_packfile_find(pf, "layer.1.experts");  // ready for moe_forward
 *   ... moe_packfile_close(pf);                                 // the moe_experts die with it
 *
 * FORMAT (version 1; little-endian, as the x86-64 hosts that run the kernels)
 *
 *   0     header, 256 bytes: magic "MOEPACKF", format version (u32 1), header bytes (u32 256),
 *         moe.h version that packed it (u32 major*10000 + minor*100 + patch), entry count (u32),
 *         index offset (u64 256) and bytes (u64 entries * 256), file bytes (u64), FNV-1a 64 of the
 *         index (u64), FNV-1a 64 of the 256 header bytes with this last field zero (u64); the rest zero
 *   256   index: one 256-byte record per entry: name (96 bytes, NUL-terminated, non-empty, unique),
 *         precision, block_n, block_k, group, kr, flags (i32 each; flag 1: b13, 2: b2), E, N, K,
 *         k13_pad, k2_pad, panels13, panels2, panel13_bytes, panel2_bytes (i64 each), then the file
 *         offsets of w13, w2, b13, b2 (u64 each; 0 for an absent bias); the rest zero
 *   ...   the data: each array at an offset that is a multiple of 4096 (pages: mapped in place,
 *         64-byte aligned for the kernels), in the packed layout of moe_gemm.h
 *
 * The panel layout belongs to the library version: a file packed by another major.minor is answered
 * MOE_ERR_UNSUPPORTED (repack it). Hostile files: every field is checked before it is used: the
 * checksums, the shapes and sizes against what moe_pack would produce for them, every array inside
 * the file and aligned; a truncated, modified, wrong-version or malformed file gets a status and a
 * message, never a read outside the mapping (tests/fuzz/fuzz_packfile.c). The checksums cover the
 * header and the index, not the panels (reading every byte at open would undo the point of mapping).
 * Statuses: MOE_ERR_NULL (a NULL argument), MOE_ERR_ARG (a malformed file, or a path that cannot be
 * read or written), MOE_ERR_UNSUPPORTED (another format or library version, a precision compiled
 * out), MOE_ERR_OVERFLOW (a size past size_t), MOE_ERR_DESCRIPTOR (an entry to write that is not a
 * packed moe_experts).
 */
#ifndef MOE_PACKFILE_H
#define MOE_PACKFILE_H

#include "moe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What went wrong, in words: "model.moepack: entry 3 (layer.4.experts): w2 past the end of the file". */
typedef struct moe_packfile_error {
  char msg[512];
} moe_packfile_error;

/* One entry to write: a name (1..95 bytes, unique in the file) and packed experts (from moe_pack). */
typedef struct moe_packfile_entry {
  const char *name;
  const moe_experts *experts;
} moe_packfile_entry;

typedef struct moe_packfile moe_packfile; /* an open file: its mapping and its entries */

/* Writes n entries to path (replaced when it exists). */
MOE_API moe_status moe_packfile_write(const char *path, const moe_packfile_entry *entries, int n,
                                      moe_packfile_error *err);
/* Maps path read-only (shared) and checks it; *pf holds n entries ready for the compute calls. */
MOE_API moe_status moe_packfile_open(const char *path, moe_packfile **pf, moe_packfile_error *err);
/* The same over size bytes in memory (no copy: data must outlive *pf and be 4096-byte aligned for the
 * panels to be aligned, else MOE_ERR_ARG); what moe_packfile_open does after mapping. */
MOE_API moe_status moe_packfile_open_memory(const void *data, size_t size, moe_packfile **pf,
                                            moe_packfile_error *err);
MOE_API int moe_packfile_count(const moe_packfile *pf);
/* Entry i's name and experts (NULL when i is out of range); find: by name, NULL when absent. */
MOE_API const char *moe_packfile_name(const moe_packfile *pf, int i);
MOE_API const moe_experts *moe_packfile_experts(const moe_packfile *pf, int i);
MOE_API const moe_experts *moe_packfile_find(const moe_packfile *pf, const char *name);
/* Unmaps the file (when opened from a path) and frees *pf; its moe_experts are invalid after. */
MOE_API void moe_packfile_close(moe_packfile *pf);

#ifdef __cplusplus
}
#endif

#ifdef MOE_PACKFILE_IMPLEMENTATION
#ifndef MOE_PACKFILE_IMPLEMENTATION_DONE
#define MOE_PACKFILE_IMPLEMENTATION_DONE
#ifndef MOE_IMPLEMENTATION
#error "moe_packfile.h's implementation checks entries against moe_pack's plan: define MOE_IMPLEMENTATION in the same file (or link libmoe, which holds both)"
#endif

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MOE__PF_FORMAT 1u
#define MOE__PF_HEADER 256u
#define MOE__PF_RECORD 256u
#define MOE__PF_NAME 96
#define MOE__PF_ALIGN 4096u
#define MOE__PF_VERSION ((uint32_t)(MOE_VERSION_MAJOR * 10000 + MOE_VERSION_MINOR * 100 + MOE_VERSION_PATCH))

/* The fixed part of the header and of a record, as written (offsets in the FORMAT comment). */
typedef struct moe__pf_header {
  char magic[8];
  uint32_t format, header_bytes, version, n_entries;
  uint64_t index_offset, index_bytes, file_bytes, index_sum, header_sum;
} moe__pf_header;
typedef struct moe__pf_record {
  char name[MOE__PF_NAME];
  int32_t precision, block_n, block_k, group, kr, flags;
  int64_t E, N, K, k13_pad, k2_pad, panels13, panels2, panel13_bytes, panel2_bytes;
  uint64_t off_w13, off_w2, off_b13, off_b2;
} moe__pf_record;

struct moe_packfile {
  void *map;            /* the mapping (NULL when opened from memory) */
  size_t map_bytes;
  int n;
  char (*names)[MOE__PF_NAME];
  moe_experts *experts;
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static moe_status moe__pf_fail(moe_packfile_error *err, moe_status s, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return s;
}

static uint64_t moe__pf_fnv(const void *p, size_t n, uint64_t h) {
  const uint8_t *b = (const uint8_t *)p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
  return h;
}
#define MOE__PF_FNV0 0xCBF29CE484222325ull
/* The header's checksum: FNV-1a 64 of its 256 bytes with header_sum zero (the rest must be zero). */
static uint64_t moe__pf_header_sum(const moe__pf_header *h) {
  uint8_t b[MOE__PF_HEADER] = {0};
  moe__pf_header c = *h;
  c.header_sum = 0;
  memcpy(b, &c, sizeof c);
  return moe__pf_fnv(b, sizeof b, MOE__PF_FNV0);
}

/* The byte counts of an entry's arrays (w13, w2, and the biases it has: flags 1 b13, 2 b2). */
static void moe__pf_sizes(const moe_experts *ex, int flags, uint64_t sz[4]) {
  sz[0] = (uint64_t)ex->E * (uint64_t)ex->panels13 * (uint64_t)ex->panel13_bytes;
  sz[1] = (uint64_t)ex->E * (uint64_t)ex->panels2 * (uint64_t)ex->panel2_bytes;
  sz[2] = flags & 1 ? (uint64_t)ex->E * 2 * (uint64_t)ex->N * sizeof(float) : 0;
  sz[3] = flags & 2 ? (uint64_t)ex->E * (uint64_t)ex->K * sizeof(float) : 0;
}

/* 1 when an entry's shape fields are what moe_pack produces for its precision, E, N, K, blocks and
 * biases (so the kernels read exactly the arrays the file holds). */
static int moe__pf_consistent(const moe_experts *ex) {
  static const float dummy_f[1] = {0};
  static const uint8_t dummy_b[1] = {0};
  moe_weights w = MOE_ZERO_INIT;
  moe__pack_plan pl;
  w.precision = ex->precision, w.E = ex->E, w.N = ex->N, w.K = ex->K;
  w.block_n = ex->block_n, w.block_k = ex->block_k, w.group = ex->group;
  w.w13 = w.w2 = dummy_b, w.w13_scale = w.w2_scale = dummy_f, w.w13_zero = w.w2_zero = dummy_b;
  w.w13_e8m0 = w.w2_e8m0 = dummy_b;
  if (ex->block_n < 1 || ex->block_k < 1 || ex->group < 1) return 0;
  if (moe__plan_pack(&w, &pl) != MOE_OK) return 0;
  return pl.block_n == ex->block_n && pl.block_k == ex->block_k && pl.group == ex->group && pl.kr == ex->kr &&
         pl.k13_pad == ex->k13_pad && pl.k2_pad == ex->k2_pad && pl.panels13 == ex->panels13 &&
         pl.panels2 == ex->panels2 && pl.panel13_bytes == ex->panel13_bytes && pl.panel2_bytes == ex->panel2_bytes;
}

static uint64_t moe__pf_round(uint64_t v) { return (v + MOE__PF_ALIGN - 1) / MOE__PF_ALIGN * MOE__PF_ALIGN; }

static moe_status moe__pf_put(FILE *f, const void *p, size_t n, const char *path, moe_packfile_error *err) {
  if (n && fwrite(p, 1, n, f) != n) return moe__pf_fail(err, MOE_ERR_ARG, "%s: write failed", path);
  return MOE_OK;
}

MOE_API moe_status moe_packfile_write(const char *path, const moe_packfile_entry *entries, int n,
                                      moe_packfile_error *err) {
  moe__pf_header h;
  moe__pf_record *idx;
  uint64_t at;
  FILE *f;
  moe_status st = MOE_OK;
  static const uint8_t zeros[MOE__PF_ALIGN] = {0};
  if (!path || !entries || n < 1) return moe__pf_fail(err, !path || !entries ? MOE_ERR_NULL : MOE_ERR_ARG, "no entries to write");
  if ((uint64_t)n > (uint64_t)1 << 20) return moe__pf_fail(err, MOE_ERR_ARG, "%d entries: at most 2^20", n);
  idx = (moe__pf_record *)calloc((size_t)n, MOE__PF_RECORD);
  if (!idx) return moe__pf_fail(err, MOE_ERR_OVERFLOW, "out of memory for %d index records", n);
  at = moe__pf_round(MOE__PF_HEADER + (uint64_t)n * MOE__PF_RECORD);
  for (int i = 0; i < n && st == MOE_OK; i++) {
    const moe_experts *ex = entries[i].experts;
    moe__pf_record *r = (moe__pf_record *)(void *)((uint8_t *)idx + (size_t)i * MOE__PF_RECORD);
    size_t len = entries[i].name ? strlen(entries[i].name) : 0;
    uint64_t sz[4], *off[4] = {&r->off_w13, &r->off_w2, &r->off_b13, &r->off_b2};
    if (!ex || !entries[i].name) st = moe__pf_fail(err, MOE_ERR_NULL, "entry %d: NULL name or experts", i);
    else if (len < 1 || len >= MOE__PF_NAME) st = moe__pf_fail(err, MOE_ERR_ARG, "entry %d: name of %zu bytes (1..%d)", i, len, MOE__PF_NAME - 1);
    else if (ex->magic != MOE__MAGIC || !ex->w13 || !ex->w2 || !moe__pf_consistent(ex))
      st = moe__pf_fail(err, MOE_ERR_DESCRIPTOR, "entry %d (%s): not a packed moe_experts", i, entries[i].name);
    for (int j = 0; j < i && st == MOE_OK; j++)
      if (!strcmp(entries[j].name, entries[i].name)) st = moe__pf_fail(err, MOE_ERR_ARG, "entry %d: name %s twice", i, entries[i].name);
    if (st != MOE_OK) break;
    memcpy(r->name, entries[i].name, len);
    r->precision = (int32_t)ex->precision, r->block_n = ex->block_n, r->block_k = ex->block_k, r->group = ex->group;
    r->kr = ex->kr, r->flags = (ex->b13 ? 1 : 0) | (ex->b2 ? 2 : 0);
    r->E = ex->E, r->N = ex->N, r->K = ex->K, r->k13_pad = ex->k13_pad, r->k2_pad = ex->k2_pad;
    r->panels13 = ex->panels13, r->panels2 = ex->panels2;
    r->panel13_bytes = (int64_t)ex->panel13_bytes, r->panel2_bytes = (int64_t)ex->panel2_bytes;
    moe__pf_sizes(ex, r->flags, sz);
    for (int a = 0; a < 4; a++)
      if (sz[a]) *off[a] = at, at = moe__pf_round(at + sz[a]);
  }
  if (st != MOE_OK) {
    free(idx);
    return st;
  }
  memset(&h, 0, sizeof h);
  memcpy(h.magic, "MOEPACKF", 8);
  h.format = MOE__PF_FORMAT, h.header_bytes = MOE__PF_HEADER, h.version = MOE__PF_VERSION, h.n_entries = (uint32_t)n;
  h.index_offset = MOE__PF_HEADER, h.index_bytes = (uint64_t)n * MOE__PF_RECORD, h.file_bytes = at;
  h.index_sum = moe__pf_fnv(idx, (size_t)h.index_bytes, MOE__PF_FNV0);
  h.header_sum = moe__pf_header_sum(&h);
  f = fopen(path, "wb");
  if (!f) {
    free(idx);
    return moe__pf_fail(err, MOE_ERR_ARG, "%s: cannot open for writing", path);
  }
  {
    uint8_t head[MOE__PF_HEADER] = {0};
    uint64_t pos = MOE__PF_HEADER + h.index_bytes;
    memcpy(head, &h, sizeof h);
    st = moe__pf_put(f, head, sizeof head, path, err);
    if (st == MOE_OK) st = moe__pf_put(f, idx, (size_t)h.index_bytes, path, err);
    for (int i = 0; i < n && st == MOE_OK; i++) {
      const moe_experts *ex = entries[i].experts;
      const moe__pf_record *r = (const moe__pf_record *)(const void *)((const uint8_t *)idx + (size_t)i * MOE__PF_RECORD);
      const void *src[4] = {ex->w13, ex->w2, ex->b13, ex->b2};
      const uint64_t off[4] = {r->off_w13, r->off_w2, r->off_b13, r->off_b2};
      uint64_t sz[4];
      moe__pf_sizes(ex, r->flags, sz);
      for (int a = 0; a < 4 && st == MOE_OK; a++) {
        if (!sz[a]) continue;
        while (pos < off[a] && st == MOE_OK) { /* zeros up to the array's page */
          size_t gap = (size_t)(off[a] - pos < MOE__PF_ALIGN ? off[a] - pos : MOE__PF_ALIGN);
          st = moe__pf_put(f, zeros, gap, path, err), pos += gap;
        }
        if (st == MOE_OK) st = moe__pf_put(f, src[a], (size_t)sz[a], path, err), pos += sz[a];
      }
    }
    while (pos < h.file_bytes && st == MOE_OK) {
      size_t gap = (size_t)(h.file_bytes - pos < MOE__PF_ALIGN ? h.file_bytes - pos : MOE__PF_ALIGN);
      st = moe__pf_put(f, zeros, gap, path, err), pos += gap;
    }
  }
  if (fclose(f) != 0 && st == MOE_OK) st = moe__pf_fail(err, MOE_ERR_ARG, "%s: write failed", path);
  free(idx);
  return st;
}

/* Record i checked against a file of `size` bytes at `data`, into *ex and *name. */
static moe_status moe__pf_entry(const uint8_t *data, size_t size, const moe__pf_record *r, int i, moe_experts *ex,
                                char *name, moe_packfile_error *err) {
  uint64_t sz[4];
  const uint64_t off[4] = {r->off_w13, r->off_w2, r->off_b13, r->off_b2};
  static const char *what[4] = {"w13", "w2", "b13", "b2"};
  size_t len = 0;
  while (len < MOE__PF_NAME && r->name[len]) len++;
  if (len == 0 || len == MOE__PF_NAME) return moe__pf_fail(err, MOE_ERR_ARG, "entry %d: name empty or not terminated", i);
  memcpy(name, r->name, len + 1);
  if (r->precision < 0 || r->precision >= (int32_t)MOE_PREC_COUNT)
    return moe__pf_fail(err, MOE_ERR_ARG, "entry %d (%s): precision %d", i, name, (int)r->precision);
  if (!moe_precision_compiled((moe_precision)r->precision))
    return moe__pf_fail(err, MOE_ERR_UNSUPPORTED, "entry %d (%s): precision %s compiled out", i, name,
                        moe_precision_name((moe_precision)r->precision));
  if ((r->flags & ~3) != 0) return moe__pf_fail(err, MOE_ERR_ARG, "entry %d (%s): flags %d", i, name, (int)r->flags);
  memset(ex, 0, sizeof *ex);
  ex->precision = (moe_precision)r->precision, ex->block_n = r->block_n, ex->block_k = r->block_k, ex->group = r->group;
  ex->kr = r->kr, ex->E = r->E, ex->N = r->N, ex->K = r->K, ex->k13_pad = r->k13_pad, ex->k2_pad = r->k2_pad;
  ex->panels13 = r->panels13, ex->panels2 = r->panels2;
  ex->panel13_bytes = (size_t)r->panel13_bytes, ex->panel2_bytes = (size_t)r->panel2_bytes;
  if (r->panel13_bytes < 1 || r->panel2_bytes < 1 || !moe__pf_consistent(ex))
    return moe__pf_fail(err, MOE_ERR_ARG, "entry %d (%s): shape fields do not match a pack of %s E %lld N %lld K %lld", i,
                        name, moe_precision_name(ex->precision), (long long)r->E, (long long)r->N, (long long)r->K);
  moe__pf_sizes(ex, r->flags, sz);
  if (!!sz[2] != !!off[2] || !!sz[3] != !!off[3])
    return moe__pf_fail(err, MOE_ERR_ARG, "entry %d (%s): a bias offset without its flag, or the reverse", i, name);
  for (int a = 0; a < 4; a++) {
    if (!sz[a]) continue;
    if (off[a] % MOE__PF_ALIGN || off[a] < MOE__PF_HEADER || off[a] > size || sz[a] > size - off[a])
      return moe__pf_fail(err, MOE_ERR_ARG, "entry %d (%s): %s at %llu + %llu bytes: misaligned or past the end (%zu bytes)",
                          i, name, what[a], (unsigned long long)off[a], (unsigned long long)sz[a], size);
  }
  ex->w13 = data + off[0], ex->w2 = data + off[1];
  ex->b13 = sz[2] ? (const float *)(const void *)(data + off[2]) : NULL;
  ex->b2 = sz[3] ? (const float *)(const void *)(data + off[3]) : NULL;
  ex->magic = MOE__MAGIC;
  return MOE_OK;
}

MOE_API moe_status moe_packfile_open_memory(const void *data, size_t size, moe_packfile **pf,
                                            moe_packfile_error *err) {
  const uint8_t *d = (const uint8_t *)data;
  moe__pf_header h;
  moe_packfile *p;
  moe_status st = MOE_OK;
  if (!pf) return moe__pf_fail(err, MOE_ERR_NULL, "pf is NULL");
  *pf = NULL;
  if (!data) return moe__pf_fail(err, MOE_ERR_NULL, "data is NULL");
  if ((uintptr_t)data % MOE__PF_ALIGN) return moe__pf_fail(err, MOE_ERR_ARG, "data is not 4096-byte aligned");
  if (size < MOE__PF_HEADER) return moe__pf_fail(err, MOE_ERR_ARG, "%zu bytes: shorter than the header", size);
  memcpy(&h, d, sizeof h);
  if (memcmp(h.magic, "MOEPACKF", 8)) return moe__pf_fail(err, MOE_ERR_ARG, "not a packed-experts file (magic)");
  for (size_t at = sizeof h; at < MOE__PF_HEADER; at++)
    if (d[at]) return moe__pf_fail(err, MOE_ERR_ARG, "header byte %zu is not zero", at);
  if (moe__pf_header_sum(&h) != h.header_sum) return moe__pf_fail(err, MOE_ERR_ARG, "header checksum mismatch");
  if (h.format != MOE__PF_FORMAT)
    return moe__pf_fail(err, MOE_ERR_UNSUPPORTED, "format version %u, this reader knows %u", h.format, MOE__PF_FORMAT);
  if (h.version / 100 != MOE__PF_VERSION / 100)
    return moe__pf_fail(err, MOE_ERR_UNSUPPORTED, "packed by moe.h %u.%u.%u, this is %s: repack", h.version / 10000,
                        h.version / 100 % 100, h.version % 100, MOE_VERSION_STRING);
  if (h.header_bytes != MOE__PF_HEADER || h.index_offset != MOE__PF_HEADER || h.n_entries < 1 || h.n_entries > (1u << 20) ||
      h.index_bytes != (uint64_t)h.n_entries * MOE__PF_RECORD)
    return moe__pf_fail(err, MOE_ERR_ARG, "header fields out of range (entries %u)", h.n_entries);
  if (h.file_bytes != size)
    return moe__pf_fail(err, MOE_ERR_ARG, "%zu bytes, the header says %llu (truncated or extended)", size,
                        (unsigned long long)h.file_bytes);
  if (h.index_bytes > size - MOE__PF_HEADER) return moe__pf_fail(err, MOE_ERR_ARG, "index past the end of the file");
  if (moe__pf_fnv(d + MOE__PF_HEADER, (size_t)h.index_bytes, MOE__PF_FNV0) != h.index_sum)
    return moe__pf_fail(err, MOE_ERR_ARG, "index checksum mismatch");
  p = (moe_packfile *)calloc(1, sizeof *p);
  if (p) p->names = (char (*)[MOE__PF_NAME])calloc(h.n_entries, MOE__PF_NAME);
  if (p) p->experts = (moe_experts *)calloc(h.n_entries, sizeof *p->experts);
  if (!p || !p->names || !p->experts) {
    if (p) free(p->names), free(p->experts), free(p);
    return moe__pf_fail(err, MOE_ERR_OVERFLOW, "out of memory for %u entries", h.n_entries);
  }
  p->n = (int)h.n_entries;
  for (int i = 0; i < p->n && st == MOE_OK; i++) {
    moe__pf_record r;
    memcpy(&r, d + MOE__PF_HEADER + (size_t)i * MOE__PF_RECORD, sizeof r);
    st = moe__pf_entry(d, size, &r, i, &p->experts[i], p->names[i], err);
    for (int j = 0; j < i && st == MOE_OK; j++)
      if (!strcmp(p->names[j], p->names[i])) st = moe__pf_fail(err, MOE_ERR_ARG, "entry %d: name %s twice", i, p->names[i]);
  }
  if (st != MOE_OK) {
    free(p->names), free(p->experts), free(p);
    return st;
  }
  *pf = p;
  return MOE_OK;
}

MOE_API moe_status moe_packfile_open(const char *path, moe_packfile **pf, moe_packfile_error *err) {
  struct stat sb;
  void *map;
  int fd;
  moe_status st;
  if (!path || !pf) return moe__pf_fail(err, MOE_ERR_NULL, "path or pf is NULL");
  *pf = NULL;
  fd = open(path, O_RDONLY);
  if (fd < 0) return moe__pf_fail(err, MOE_ERR_ARG, "%s: cannot open", path);
  if (fstat(fd, &sb) != 0 || sb.st_size < (off_t)MOE__PF_HEADER) {
    close(fd);
    return moe__pf_fail(err, MOE_ERR_ARG, "%s: not a packed-experts file (%lld bytes)", path, (long long)sb.st_size);
  }
  if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX) {
    close(fd);
    return moe__pf_fail(err, MOE_ERR_OVERFLOW, "%s: larger than the address space", path);
  }
  map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return moe__pf_fail(err, MOE_ERR_ARG, "%s: cannot map", path);
  st = moe_packfile_open_memory(map, (size_t)sb.st_size, pf, err);
  if (st != MOE_OK) {
    munmap(map, (size_t)sb.st_size);
    if (err) { /* name the file in the message (cut to fit) */
      char m[sizeof err->msg];
      size_t lp = strlen(path), lm = strlen(err->msg);
      if (lp > sizeof m / 2) lp = sizeof m / 2;
      if (lm > sizeof m - lp - 3) lm = sizeof m - lp - 3;
      memcpy(m, path, lp), memcpy(m + lp, ": ", 2), memcpy(m + lp + 2, err->msg, lm), m[lp + 2 + lm] = 0;
      memcpy(err->msg, m, sizeof m);
    }
    return st;
  }
  (*pf)->map = map, (*pf)->map_bytes = (size_t)sb.st_size;
  return MOE_OK;
}

MOE_API int moe_packfile_count(const moe_packfile *pf) { return pf ? pf->n : 0; }
MOE_API const char *moe_packfile_name(const moe_packfile *pf, int i) {
  return pf && i >= 0 && i < pf->n ? pf->names[i] : NULL;
}
MOE_API const moe_experts *moe_packfile_experts(const moe_packfile *pf, int i) {
  return pf && i >= 0 && i < pf->n ? &pf->experts[i] : NULL;
}
MOE_API const moe_experts *moe_packfile_find(const moe_packfile *pf, const char *name) {
  for (int i = 0; pf && name && i < pf->n; i++)
    if (!strcmp(pf->names[i], name)) return &pf->experts[i];
  return NULL;
}
MOE_API void moe_packfile_close(moe_packfile *pf) {
  if (!pf) return;
  if (pf->map) munmap(pf->map, pf->map_bytes);
  free(pf->names), free(pf->experts), free(pf);
}

#endif /* MOE_PACKFILE_IMPLEMENTATION_DONE */
#endif /* MOE_PACKFILE_IMPLEMENTATION */
#endif /* MOE_PACKFILE_H */
