/* libmoe: the whole header-only library as one ordinary translation unit, with external linkage,
 * for FFI users and build systems that want a library to link: moe.h and the packed-experts files
 * of moe_packfile.h (POSIX mmap). */
#define _POSIX_C_SOURCE 200809L
#define MOE_API
#define MOE_IMPLEMENTATION
#define MOE_PACKFILE_IMPLEMENTATION
#include "moe_packfile.h"
