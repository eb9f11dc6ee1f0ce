// Import progress as one log line of the import Job, and read back by the provider: the Job's
// pod cannot write the VMImage (its identity reads only what the import needs), so the
// provider, which watches its Jobs, reads the tail of the running pod's log and puts the last
// progress line on the zone's row (`kubectl get bvmimage -o yaml`: zones[].progress).
//
//   import progress: phase=Uploading bytesDone=1048576 bytesTotal=4194304 percent=25
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace banlieue::roles::images {

struct ImportProgress {
  std::string phase;  // Verifying, then the plugin's (Uploading, Importing, Installing, ...)
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
  int percent = 0;  // 0-100; 100 when the total is unknown and the phase is done
};

ImportProgress importProgress(std::string phase, uint64_t done, uint64_t total);
std::string importProgressLine(const ImportProgress& progress);

// The last progress line in a log excerpt (text or JSON log lines), nullopt when there is none
// or it is malformed.
std::optional<ImportProgress> lastImportProgress(std::string_view log);

// "Uploading 25% (1.0 MiB of 4.0 MiB)"
std::string describeImportProgress(const ImportProgress& progress);

}  // namespace banlieue::roles::images
