#include "host/common/allocator_tuning.h"

#include <malloc.h>

namespace banlieue::common {
namespace {
constexpr int kServerArenas = 2;
}  // namespace

void tuneAllocatorForServer() {
  // Keep up to 16 MiB of free heap top before trimming, and grow the heap 1 MiB at a time.
  // Per arena (below): the cap on arenas bounds what this threshold can keep.
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
  mallopt(M_TOP_PAD, 1 << 20);
  // glibc gives a thread that finds its arena locked a new one, up to 8 per core of the host
  // (not of the container's CPU limit): about 15 arenas on 2 cores for the controller's
  // ~120 threads, each arena keeping its own free memory and up to the trim threshold above.
  // The roles wait on the API server and the backend far more than they allocate, and run
  // under a 1-CPU limit as shipped, so a few arenas cost little contention.
  mallopt(M_ARENA_MAX, kServerArenas);
}

}  // namespace banlieue::common
