/* moe_tiers/transpose8.h — the 8 x 8 transpose of 32-bit words in AVX2 registers, shared by the AVX2
 * tier's packer (moe_tiers/avx2.h) and GPTQ's importer (moe_import.h). Each of those headers compiles
 * on its own, and their common base, moe_quant.h, has no intrinsics: so the transpose lives here,
 * under the same gate as theirs (x86, GCC or Clang, not MOE_NO_AVX2). */
#ifndef MOE_TIERS_TRANSPOSE8_H
#define MOE_TIERS_TRANSPOSE8_H
#if (defined(__x86_64__) || defined(_M_X64) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(MOE_NO_AVX2)
#include <immintrin.h>
/* word c of r[j] becomes word j of r[c] */
__attribute__((target("avx2"), always_inline)) static inline void moe__word_transpose8_avx2(__m256i r[8]) {
  __m256i t[8];
  for (int j = 0; j < 8; j += 2) t[j] = _mm256_unpacklo_epi32(r[j], r[j + 1]), t[j + 1] = _mm256_unpackhi_epi32(r[j], r[j + 1]);
  for (int j = 0; j < 8; j += 4) { /* r[j + c]: words c (low half) and c + 4 (high half) of rows j..j+3 */
    r[j] = _mm256_unpacklo_epi64(t[j], t[j + 2]), r[j + 1] = _mm256_unpackhi_epi64(t[j], t[j + 2]);
    r[j + 2] = _mm256_unpacklo_epi64(t[j + 1], t[j + 3]), r[j + 3] = _mm256_unpackhi_epi64(t[j + 1], t[j + 3]);
  }
  for (int c = 0; c < 4; c++) {
    const __m256i a = r[c], b = r[4 + c];
    r[c] = _mm256_permute2x128_si256(a, b, 0x20), r[4 + c] = _mm256_permute2x128_si256(a, b, 0x31);
  }
}
#endif
#endif /* MOE_TIERS_TRANSPOSE8_H */
