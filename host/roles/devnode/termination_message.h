// What a kubelet reports as a terminated container's `message`: the termination message file
// the container wrote (at most 4 KiB), or, with terminationMessagePolicy FallbackToLogsOnError
// and a failure that left the file empty, the tail of its log (at most 80 lines and 2 KiB).
#pragma once

#include <filesystem>
#include <string>

namespace banlieue::roles::devnode {

inline constexpr const char* kDefaultTerminationMessagePath = "/dev/termination-log";

std::string readTerminationMessage(const std::filesystem::path& termination_file,
                                   const std::filesystem::path& log_file, const std::string& policy,
                                   int exit_code);

}  // namespace banlieue::roles::devnode
