/* npy.h — a tiny reader and writer of NumPy .npy files holding one 2-D float32 array in C order.
 * Header-only, plain C99 (stdio only; no POSIX).
 *
 *   npy_f32 a; char msg[256];
 *   if (npy_read_f32(path, &a, msg, sizeof msg) != 0) { fprintf(stderr, "%s: %s\n", path, msg); ... }
 *   ... a.data[r * a.cols + c] ...
 *   if (npy_write_f32(path, a.data, a.rows, a.cols, msg, sizeof msg) != 0) ...
 *   npy_free(&a);
 *
 * Format (numpy.lib.format): the magic "\x93NUMPY", a major and a minor version byte, the header
 * length (version 1.0: u16 little-endian; 2.0: u32), then an ASCII Python dict literal
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (M, K), }
 * padded with spaces and ended by '\n' so that magic + version + length + dict is a multiple of 64;
 * then the M * K little-endian floats.
 *
 * The writer writes version 1.0 exactly like that. The reader takes versions 1.0 and 2.0 and checks
 * everything before it is used: the magic, the version, the header length against the file, the
 * dict (exactly the three keys, each once, in any order; either quote; a trailing comma), descr
 * '<f4' only, fortran_order False, a 2-D shape of non-negative integers, the byte count (no
 * overflow), and that the data fill the rest of the file exactly (a shorter file is truncated,
 * a longer one has junk at the end). Any failure returns -1 and a message in msg, never a crash.
 * npy_parse works on bytes in memory, so it can be tested or fuzzed without files.
 */
#ifndef NPY_H
#define NPY_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A 2-D float32 array [rows, cols], row-major; data is malloc'ed (never NULL after a successful
 * read, even with 0 elements). */
typedef struct npy_f32 {
  float *data;
  int64_t rows, cols;
} npy_f32;

/* ---- internals ---------------------------------------------------------------------------------- */
static inline void npy__msg(char *msg, size_t size, const char *fmt, long long a, long long b) {
  if (msg && size) snprintf(msg, size, fmt, a, b);
}

static inline int npy__host_le(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static inline void npy__bswap32(void *p, size_t n) {
  unsigned char *b = (unsigned char *)p, t;
  for (size_t i = 0; i < n; i++, b += 4) t = b[0], b[0] = b[3], b[3] = t, t = b[1], b[1] = b[2], b[2] = t;
}

typedef struct npy__cursor {
  const char *p, *end;
} npy__cursor;

static inline void npy__ws(npy__cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static inline int npy__eat(npy__cursor *c, char ch) {
  npy__ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A quoted string without escapes into out (at most cap - 1 characters); 0 on failure. */
static inline int npy__string(npy__cursor *c, char *out, size_t cap) {
  char q;
  size_t n = 0;
  npy__ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
  q = *c->p++;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || n + 1 >= cap) return 0;
    out[n++] = *c->p++;
  }
  if (c->p >= c->end) return 0;
  c->p++;
  out[n] = '\0';
  return 1;
}

/* A Python identifier (True, False) into out; 0 on failure. */
static inline int npy__word(npy__cursor *c, char *out, size_t cap) {
  size_t n = 0;
  npy__ws(c);
  while (c->p < c->end && ((*c->p >= 'A' && *c->p <= 'Z') || (*c->p >= 'a' && *c->p <= 'z'))) {
    if (n + 1 >= cap) return 0;
    out[n++] = *c->p++;
  }
  out[n] = '\0';
  return n > 0;
}

/* A non-negative decimal integer (an old 'L' suffix allowed) up to INT64_MAX; 0 on failure. */
static inline int npy__int(npy__cursor *c, int64_t *v) {
  int64_t x = 0;
  int digits = 0;
  npy__ws(c);
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    int d = *c->p++ - '0';
    if (x > (INT64_MAX - d) / 10) return 0;
    x = x * 10 + d, digits++;
  }
  if (!digits) return 0;
  if (c->p < c->end && *c->p == 'L') c->p++;
  *v = x;
  return 1;
}

/* ---- parsing bytes in memory ------------------------------------------------------------------- */
/* Checks a whole .npy file in memory: on success, 0 with *rows, *cols and *data_offset (where the
 * rows * cols little-endian floats start; they end exactly at size). Else -1 and a message. */
static inline int npy_parse(const unsigned char *file, size_t size, int64_t *rows, int64_t *cols,
                            size_t *data_offset, char *msg, size_t msg_size) {
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  size_t prefix, hlen, data, need;
  npy__cursor c;
  int seen_descr = 0, seen_fortran = 0, seen_shape = 0;
  int64_t shape[2] = {0, 0};
  if (!file || !rows || !cols || !data_offset) {
    npy__msg(msg, msg_size, "npy_parse: a NULL argument", 0, 0);
    return -1;
  }
  if (memcmp(file, magic, size < 6 ? size : 6) != 0) {
    npy__msg(msg, msg_size, "not a .npy file (no \\x93NUMPY magic)", 0, 0);
    return -1;
  }
  if (size < 10) {
    npy__msg(msg, msg_size, "truncated: %lld bytes, too short for a .npy header", (long long)size, 0);
    return -1;
  }
  if ((file[6] != 1 && file[6] != 2) || file[7] != 0) {
    npy__msg(msg, msg_size, ".npy version %lld.%lld is not supported (1.0 and 2.0 are)", file[6], file[7]);
    return -1;
  }
  if (file[6] == 1) {
    prefix = 10;
    hlen = (size_t)file[8] | (size_t)file[9] << 8;
  } else {
    if (size < 12) {
      npy__msg(msg, msg_size, "too short for a .npy 2.0 header (%lld bytes)", (long long)size, 0);
      return -1;
    }
    prefix = 12;
    hlen = (size_t)file[8] | (size_t)file[9] << 8 | (size_t)file[10] << 16 | (size_t)file[11] << 24;
  }
  if (hlen > size - prefix) {
    npy__msg(msg, msg_size, "truncated: the header needs %lld bytes, the file has %lld after the length",
             (long long)hlen, (long long)(size - prefix));
    return -1;
  }
  for (size_t i = 0; i < hlen; i++)
    if (file[prefix + i] < 0x20 && file[prefix + i] != '\n' && file[prefix + i] != '\r' && file[prefix + i] != '\t') {
      npy__msg(msg, msg_size, "header byte %lld is a control character (0x%02llx)", (long long)i, file[prefix + i]);
      return -1;
    } else if (file[prefix + i] >= 0x7f) {
      npy__msg(msg, msg_size, "header byte %lld is not ASCII (0x%02llx)", (long long)i, file[prefix + i]);
      return -1;
    }
  c.p = (const char *)file + prefix;
  c.end = c.p + hlen;
  if (!npy__eat(&c, '{')) {
    npy__msg(msg, msg_size, "header is not a dict (no '{')", 0, 0);
    return -1;
  }
  while (!npy__eat(&c, '}')) {
    char key[32], val[32];
    if (!npy__string(&c, key, sizeof key) || !npy__eat(&c, ':')) {
      npy__msg(msg, msg_size, "header dict: expected 'key': at byte %lld", (long long)(c.p - (const char *)file), 0);
      return -1;
    }
    if (strcmp(key, "descr") == 0) {
      if (seen_descr++) goto duplicate;
      if (!npy__string(&c, val, sizeof val)) {
        npy__msg(msg, msg_size, "header dict: 'descr' is not a plain dtype string (structured dtypes are not supported)", 0, 0);
        return -1;
      }
      if (strcmp(val, "<f4") != 0) {
        if (msg && msg_size)
          snprintf(msg, msg_size, "dtype '%s' is not supported (only '<f4': float32, little-endian)", val);
        return -1;
      }
    } else if (strcmp(key, "fortran_order") == 0) {
      if (seen_fortran++) goto duplicate;
      if (!npy__word(&c, val, sizeof val) || (strcmp(val, "False") != 0 && strcmp(val, "True") != 0)) {
        npy__msg(msg, msg_size, "header dict: 'fortran_order' is not True or False", 0, 0);
        return -1;
      }
      if (strcmp(val, "True") == 0) {
        npy__msg(msg, msg_size, "fortran_order True is not supported (C order only)", 0, 0);
        return -1;
      }
    } else if (strcmp(key, "shape") == 0) {
      int nd = 0;
      if (seen_shape++) goto duplicate;
      if (!npy__eat(&c, '(')) {
        npy__msg(msg, msg_size, "header dict: 'shape' is not a tuple", 0, 0);
        return -1;
      }
      while (!npy__eat(&c, ')')) {
        int64_t d;
        if (!npy__int(&c, &d)) {
          npy__msg(msg, msg_size, "header dict: 'shape' holds something other than integers up to 2^63 - 1", 0, 0);
          return -1;
        }
        if (nd < 2) shape[nd] = d;
        nd++;
        if (!npy__eat(&c, ',')) {
          if (!npy__eat(&c, ')')) {
            npy__msg(msg, msg_size, "header dict: 'shape' is not a tuple of integers", 0, 0);
            return -1;
          }
          break;
        }
      }
      if (nd != 2) {
        npy__msg(msg, msg_size, "the array has %lld dimension(s); a 2-D array [rows, cols] is needed", nd, 0);
        return -1;
      }
    } else {
      if (msg && msg_size) snprintf(msg, msg_size, "header dict: unexpected key '%s'", key);
      return -1;
    }
    if (!npy__eat(&c, ',')) {
      if (!npy__eat(&c, '}')) {
        npy__msg(msg, msg_size, "header dict: expected ',' or '}' at byte %lld", (long long)(c.p - (const char *)file), 0);
        return -1;
      }
      break;
    }
  }
  npy__ws(&c);
  if (c.p != c.end) {
    npy__msg(msg, msg_size, "junk after the header dict at byte %lld", (long long)(c.p - (const char *)file), 0);
    return -1;
  }
  if (!seen_descr || !seen_fortran || !seen_shape) {
    if (msg && msg_size)
      snprintf(msg, msg_size, "header dict: missing '%s'", !seen_descr ? "descr" : !seen_fortran ? "fortran_order" : "shape");
    return -1;
  }
  /* rows * cols * 4 bytes, without overflow */
  if (shape[0] && (uint64_t)shape[1] > (uint64_t)(SIZE_MAX / 4) / (uint64_t)shape[0]) {
    npy__msg(msg, msg_size, "shape (%lld, %lld) is too large (the byte count overflows)", (long long)shape[0],
             (long long)shape[1]);
    return -1;
  }
  need = (size_t)shape[0] * (size_t)shape[1] * 4;
  data = size - prefix - hlen;
  if (data != need) {
    if (msg && msg_size)
      snprintf(msg, msg_size, "%s: shape (%lld, %lld) needs %llu data bytes, the file has %llu",
               data < need ? "truncated" : "junk after the data", (long long)shape[0], (long long)shape[1],
               (unsigned long long)need, (unsigned long long)data);
    return -1;
  }
  *rows = shape[0], *cols = shape[1], *data_offset = prefix + hlen;
  return 0;
duplicate:
  npy__msg(msg, msg_size, "header dict: a key appears twice", 0, 0);
  return -1;
}

/* ---- files --------------------------------------------------------------------------------------- */
/* Reads a whole file into a malloc'ed buffer (growing it: no size is trusted before it is read). */
static inline int npy__slurp(const char *path, unsigned char **buf, size_t *size, char *msg, size_t msg_size) {
  FILE *f = fopen(path, "rb");
  size_t cap = 0, n = 0;
  unsigned char *b = NULL;
  *buf = NULL, *size = 0;
  if (!f) {
    if (msg && msg_size) snprintf(msg, msg_size, "cannot open: %s", strerror(errno));
    return -1;
  }
  for (;;) {
    size_t got;
    if (n == cap) {
      unsigned char *nb;
      if (cap > SIZE_MAX / 2) {
        npy__msg(msg, msg_size, "file too large", 0, 0);
        goto fail;
      }
      cap = cap ? 2 * cap : (size_t)1 << 16;
      nb = (unsigned char *)realloc(b, cap);
      if (!nb) {
        npy__msg(msg, msg_size, "out of memory reading %lld bytes", (long long)cap, 0);
        goto fail;
      }
      b = nb;
    }
    got = fread(b + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    if (msg && msg_size) snprintf(msg, msg_size, "read error: %s", strerror(errno));
    goto fail;
  }
  fclose(f);
  *buf = b, *size = n;
  return 0;
fail:
  free(b);
  fclose(f);
  return -1;
}

/* Reads path into *out (free with npy_free); 0 on success, else -1 and a message (out zeroed). */
static inline int npy_read_f32(const char *path, npy_f32 *out, char *msg, size_t msg_size) {
  unsigned char *buf;
  size_t size, off, bytes;
  int64_t rows, cols;
  if (!out || !path) {
    npy__msg(msg, msg_size, "npy_read_f32: a NULL argument", 0, 0);
    return -1;
  }
  memset(out, 0, sizeof *out);
  if (npy__slurp(path, &buf, &size, msg, msg_size) != 0) return -1;
  if (npy_parse(buf, size, &rows, &cols, &off, msg, msg_size) != 0) {
    free(buf);
    return -1;
  }
  bytes = size - off; /* = rows * cols * 4, checked */
  memmove(buf, buf + off, bytes);
  if (!npy__host_le()) npy__bswap32(buf, bytes / 4);
  if (bytes) { /* give back the header's bytes; keep the buffer if shrinking fails */
    unsigned char *nb = (unsigned char *)realloc(buf, bytes);
    if (nb) buf = nb;
  }
  out->data = (float *)(void *)buf, out->rows = rows, out->cols = cols;
  return 0;
}

/* Writes data [rows, cols] (row-major) as a version 1.0 .npy file; 0 on success, else -1 and a message. */
static inline int npy_write_f32(const char *path, const float *data, int64_t rows, int64_t cols, char *msg,
                                size_t msg_size) {
  char head[128];
  int len;
  size_t total, n;
  FILE *f;
  int ok;
  if (!path || (!data && rows > 0 && cols > 0)) {
    npy__msg(msg, msg_size, "npy_write_f32: a NULL argument", 0, 0);
    return -1;
  }
  if (rows < 0 || cols < 0 || (rows && (uint64_t)cols > (uint64_t)(SIZE_MAX / 4) / (uint64_t)rows)) {
    npy__msg(msg, msg_size, "npy_write_f32: bad shape (%lld, %lld)", (long long)rows, (long long)cols);
    return -1;
  }
  n = (size_t)rows * (size_t)cols;
  /* 10 bytes of prefix, then the dict padded with spaces to a multiple of 64, ending in '\n' */
  memcpy(head, "\x93NUMPY\x01\x00", 8);
  len = snprintf(head + 10, sizeof head - 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
                 (long long)rows, (long long)cols);
  if (len < 0 || (size_t)len + 10 + 1 > sizeof head) {
    npy__msg(msg, msg_size, "npy_write_f32: header too long", 0, 0);
    return -1;
  }
  total = ((size_t)len + 10 + 1 + 63) / 64 * 64;
  if (total > sizeof head) {
    npy__msg(msg, msg_size, "npy_write_f32: header too long", 0, 0);
    return -1;
  }
  memset(head + 10 + len, ' ', total - 10 - (size_t)len - 1);
  head[total - 1] = '\n';
  head[8] = (char)((total - 10) & 0xff), head[9] = (char)((total - 10) >> 8);
  f = fopen(path, "wb");
  if (!f) {
    if (msg && msg_size) snprintf(msg, msg_size, "cannot create: %s", strerror(errno));
    return -1;
  }
  ok = fwrite(head, 1, total, f) == total;
  if (npy__host_le()) {
    ok = ok && (n == 0 || fwrite(data, 4, n, f) == n);
  } else {
    float tmp[1024];
    for (size_t i = 0; ok && i < n; i += 1024) {
      size_t k = n - i < 1024 ? n - i : 1024;
      memcpy(tmp, data + i, k * 4);
      npy__bswap32(tmp, k);
      ok = fwrite(tmp, 4, k, f) == k;
    }
  }
  if (!ok) {
    if (msg && msg_size) snprintf(msg, msg_size, "write error: %s", strerror(errno));
    fclose(f);
    return -1;
  }
  if (fclose(f) != 0) {
    if (msg && msg_size) snprintf(msg, msg_size, "write error: %s", strerror(errno));
    return -1;
  }
  return 0;
}

static inline void npy_free(npy_f32 *a) {
  if (!a) return;
  free(a->data);
  a->data = NULL, a->rows = a->cols = 0;
}

#endif /* NPY_H */
