// call_api.c compiled as C++ by Meson's C++ compiler (the project needs one only for this test).
#include "call_api.c"
