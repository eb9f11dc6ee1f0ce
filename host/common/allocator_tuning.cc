#include "host/common/allocator_tuning.h"

#include <malloc.h>

namespace banlieue::common {

void tuneAllocatorForServer() {
  // Keep up to 16 MiB of free heap top before trimming, and grow the heap 1 MiB at a time.
  // A controller's working set is far larger, so this does not change its footprint.
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
  mallopt(M_TOP_PAD, 1 << 20);
}

}  // namespace banlieue::common
