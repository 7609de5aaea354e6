/* libmoe: the whole header-only library as one ordinary translation unit, with external linkage,
 * for FFI users and build systems that want a library to link. */
#define MOE_API
#define MOE_IMPLEMENTATION
#include "moe.h"
