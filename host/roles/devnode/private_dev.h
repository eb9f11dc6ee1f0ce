// A container's own /dev, so the node agent can offer a kubelet's termination message file
// (terminationMessagePath, /dev/termination-log by default) without creating anything in the
// node's /dev. Inside the container's mount namespace a tmpfs is filled with the node's /dev
// entries (directories and device nodes bind-mounted, symlinks copied) plus the termination
// file bind-mounted from the pod's directory, and moved over /dev. Outside, nothing changes.
//
// The plan is built before fork() (it allocates); applying it between fork() and exec() makes
// only system calls on prepared buffers.
#pragma once

#include "host/common/status_or.h"

#include <filesystem>
#include <string>
#include <vector>

namespace banlieue::roles::devnode {

struct PrivateDevPlan {
  enum class Kind { kDirectory, kSymlink, kNode };
  struct Entry {
    Kind kind = Kind::kNode;
    std::string node_path;    // /dev/<name>
    std::string staged_path;  // <staging>/<name>
    std::string link_target;  // symlinks only
  };
  std::string staging;  // an empty directory of the node agent's, the tmpfs's mount point
  std::vector<Entry> entries;
  std::string termination_source;  // the pod directory's file
  std::string termination_staged;  // <staging>/<name of the termination file>
};

// Lists the node's /dev (skipping an entry named like the termination file) and creates the
// staging directory. `termination_name` is the file's name inside /dev.
StatusOr<PrivateDevPlan> planPrivateDev(const std::filesystem::path& staging,
                                        const std::filesystem::path& termination_source,
                                        const std::string& termination_name);

// In the child, after unshare(CLONE_NEWNS) with / made private. Returns nullptr on success,
// otherwise the path whose mount failed (errno says why). A device node that cannot be bound
// is left out rather than failing the container, as a runtime leaves out what it cannot offer.
const char* applyPrivateDev(const PrivateDevPlan& plan);

}  // namespace banlieue::roles::devnode
