/* Only INT8 left: the others are compiled out and their calls return MOE_ERR_UNSUPPORTED. */
#define MOE_NO_BF16
#define MOE_NO_FP8
#define MOE_NO_INT4
#define MOE_NO_MXFP4
#define MOE_IMPLEMENTATION
#include "../../moe.h"
#include "../test_util.h"

int main(void) {
  int8_t w13[2 * 4 * 8], w2[8 * 4];
  float s13[8], s2[8];
  uint16_t wb[2 * 4 * 8 * 2];
  moe_weights w;
  moe_experts ex;
  static unsigned char buf[1 << 16];
  for (int i = 0; i < (int)sizeof w13; i++) w13[i] = (int8_t)(i % 7 - 3);
  for (int i = 0; i < (int)sizeof w2; i++) w2[i] = (int8_t)(i % 5 - 2);
  for (int i = 0; i < 8; i++) s13[i] = s2[i] = 0.01f;
  memset(wb, 0, sizeof wb);
  memset(&w, 0, sizeof w);
  w.precision = MOE_PREC_INT8, w.E = 1, w.N = 4, w.K = 8;
  w.w13 = w13, w.w2 = w2, w.w13_scale = s13, w.w2_scale = s2;
  CHECK(moe_precision_compiled(MOE_PREC_INT8) == 1, "int8 should be compiled");
  CHECK(moe_pack(&w, &ex, buf, sizeof buf) == MOE_OK, "int8 pack");
  for (int p = 0; p < MOE_PREC_COUNT; p++) {
    if (p == MOE_PREC_INT8) continue;
    CHECK(moe_precision_compiled((moe_precision)p) == 0, "%s should be compiled out", moe_precision_name((moe_precision)p));
    w.precision = (moe_precision)p;
    w.w13 = wb, w.w2 = wb;
    CHECK(moe_pack(&w, &ex, buf, sizeof buf) == MOE_ERR_UNSUPPORTED, "%s pack", moe_precision_name((moe_precision)p));
    CHECK(moe_gemm_select((moe_precision)p) == NULL, "no kernels for %s", moe_precision_name((moe_precision)p));
  }
  {
    moe_experts fake = ex;
    moe_call c;
    size_t ws;
    memset(&c, 0, sizeof c);
    c.M = 1, c.topk = 1;
    fake.precision = MOE_PREC_BF16;
    CHECK(moe_workspace_size(&fake, &c, &ws) == MOE_ERR_UNSUPPORTED, "bf16 call");
  }
  return test_finish("only_int8");
}
