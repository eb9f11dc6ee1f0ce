// Runs one container of a pod as a local process: its own session (so signals reach the whole
// process group) and, when it has volume mounts or a termination message file, its own mount
// namespace in which each volume directory is bind-mounted at the container's mountPath and
// the termination file at its terminationMessagePath (under /dev: in a private /dev, see
// private_dev.h). Nothing is mounted in the node's namespace, so a crashed agent leaves no
// mounts behind.
#pragma once

#include "host/common/status_or.h"

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::roles::devnode {

struct BindMount {
  std::string source;  // a directory or file on the node
  std::string target;  // the container's mountPath
  bool read_only = false;
};

struct LaunchSpec {
  std::string executable;         // absolute path
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // KEY=VALUE
  std::vector<BindMount> mounts;
  std::string working_dir = "/";
  std::filesystem::path log_file;  // stdout and stderr, appended
  // The container's terminationMessagePath and the node file behind it (which must exist);
  // empty: the container gets none.
  std::string termination_path;
  std::filesystem::path termination_file;
};

// Starts the process. Fails (without starting anything) when mounts or a termination file are
// requested and this process cannot create mount namespaces (it needs CAP_SYS_ADMIN, i.e. root).
StatusOr<pid_t> launchContainer(const LaunchSpec& spec);

// The exit code once the process has ended (128 + signal when a signal killed it), reaping
// it; nullopt while it runs.
std::optional<int> pollExit(pid_t pid);

// Sends `signal` to the process group the container leads.
void signalContainer(pid_t pid, int signal);

}  // namespace banlieue::roles::devnode
