#pragma once

// XXH3-64 is the checksum of every chunk and file lifeboat writes. Debian's
// libxxhash is built for the x86-64 baseline (SSE2); its dispatching entry
// points pick AVX2 or AVX-512 at run time where the CPU has them, about twice
// as fast, with the same digests. The dispatch header renames XXH3_64bits and
// XXH3_64bits_update to them.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif
