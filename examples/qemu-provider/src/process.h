// Child processes and the processes of machines, bounded by a call's deadline: qemu-img and
// qemu-system-x86_64 are run without a shell, their output kept for error messages, and a
// QEMU that daemonized (so is no child of ours) is watched through a pidfd.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace qemu_provider {

using Deadline = std::chrono::steady_clock::time_point;

struct ProcessResult {
  bool timed_out = false;
  int exit_code = -1;  // -1 when it did not exit normally
  std::string output;  // stdout and stderr together, truncated to 4 KiB
};

// Runs argv[0] (an absolute path) with stdin from /dev/null until it exits or `deadline`
// passes (it is then killed and reaped). Throws banlieue::sdk::Error (UNAVAILABLE) when it
// cannot be started at all.
ProcessResult runProcess(const std::vector<std::string>& argv, Deadline deadline);

// Whether `pid` is a live process (not a zombie) whose command line contains `marker`: a pid
// from a pidfile is trusted only when it is still the QEMU that wrote it, never a process that
// reused the number.
bool processMatches(pid_t pid, const std::string& marker);

// Waits until `pid` has exited or `deadline` passes; true when it is gone.
bool waitForExit(pid_t pid, Deadline deadline);

// The pid in a pidfile, when there is one.
std::optional<pid_t> readPidFile(const std::filesystem::path& path);

// Every live process whose command line contains `marker` (a test's and a cleanup's view).
std::vector<pid_t> processesWith(const std::string& marker);

}  // namespace qemu_provider
