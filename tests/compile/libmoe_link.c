/* A translation unit without the implementation, linked against the shared libmoe (FFI-style). */
#include "moe.h"
#include <stdio.h>
#include <string.h>

int main(void) {
  const char *s = moe_status_str(MOE_ERR_EXPERT_ID);
  printf("libmoe: %s, isa %s\n", s, moe_isa_name(moe_get_isa()));
  return s && strlen(s) > 0 && moe_f32_to_bf16(1.0f) == 0x3F80 ? 0 : 1;
}
