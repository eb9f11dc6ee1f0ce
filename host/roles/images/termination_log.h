#pragma once
// The termination message of the image Jobs' containers (image-import, image-checksum): the
// one place their outcome reaches the role that watches the Job.

#include <cstddef>
#include <string>

namespace banlieue::roles::images {

// Where the kubelet puts a container's termination log unless the pod names another file.
inline constexpr const char* kDefaultTerminationLog = "/dev/termination-log";

// The kubelet keeps at most 4 KiB of a termination message; free text is cut to this first.
inline constexpr std::size_t kTerminationMessageTextLimit = 3000;

// Writes `json` to `path`, truncating it, only where the file can belong to a container: the
// default file only when the kubelet created it (no stray file in /dev from a shell), any
// other path only when its directory exists. Failures are silent: the logs carry the outcome.
void writeTerminationLog(const std::string& path, const std::string& json);

}  // namespace banlieue::roles::images
