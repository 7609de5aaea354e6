/* Compile test: one header on its own (HEADER is set on the command line), with or without the
 * implementation, as C and as C++. */
#include HEADER
int main(void) {
  moe_status s = MOE_OK;
  return (int)s;
}
