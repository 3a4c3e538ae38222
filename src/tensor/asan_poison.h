// Marking memory a cache holds as unaddressable under AddressSanitizer, so that a use after free
// of a block kept for reuse (the CPU allocator's cached blocks, the small-object pool's free
// blocks and spare TensorImpls) is still reported. Without ASan both macros do nothing.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define AOTGRAD_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define AOTGRAD_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define AOTGRAD_POISON(p, n) ((void)(p), (void)(n))
#define AOTGRAD_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
