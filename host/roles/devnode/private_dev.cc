#include "host/roles/devnode/private_dev.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <system_error>

namespace banlieue::roles::devnode {

namespace fs = std::filesystem;

StatusOr<PrivateDevPlan> planPrivateDev(const fs::path& staging, const fs::path& termination_source,
                                        const std::string& termination_name) {
  PrivateDevPlan plan;
  std::error_code ec;
  fs::create_directories(staging, ec);
  if (ec) {
    return error(Code::kInternal, "PrivateDevUnavailable",
                 "cannot create " + staging.string() + ": " + ec.message());
  }
  plan.staging = staging.string();
  for (const auto& entry : fs::directory_iterator("/dev", ec)) {
    std::string name = entry.path().filename().string();
    if (name == termination_name) continue;
    PrivateDevPlan::Entry e;
    e.node_path = entry.path().string();
    e.staged_path = (staging / name).string();
    auto status = entry.symlink_status(ec);
    if (ec) continue;  // gone meanwhile
    if (fs::is_symlink(status)) {
      e.kind = PrivateDevPlan::Kind::kSymlink;
      e.link_target = fs::read_symlink(entry.path(), ec).string();
      if (ec) continue;
    } else if (fs::is_directory(status)) {
      e.kind = PrivateDevPlan::Kind::kDirectory;
    }
    plan.entries.push_back(std::move(e));
  }
  if (ec) {
    return error(Code::kInternal, "PrivateDevUnavailable", "cannot list /dev: " + ec.message());
  }
  plan.termination_source = termination_source.string();
  plan.termination_staged = (staging / termination_name).string();
  return plan;
}

const char* applyPrivateDev(const PrivateDevPlan& plan) {
  const char* staging = plan.staging.c_str();
  if (mount("tmpfs", staging, "tmpfs", MS_NOSUID, "mode=755") != 0) return staging;
  for (const auto& e : plan.entries) {
    const char* staged = e.staged_path.c_str();
    switch (e.kind) {
      case PrivateDevPlan::Kind::kSymlink: (void)!symlink(e.link_target.c_str(), staged); break;
      case PrivateDevPlan::Kind::kDirectory:
        if (mkdir(staged, 0755) == 0 &&
            mount(e.node_path.c_str(), staged, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
          rmdir(staged);
        }
        break;
      case PrivateDevPlan::Kind::kNode: {
        int fd = open(staged, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);  // a mount point
        if (fd >= 0) close(fd);
        if (mount(e.node_path.c_str(), staged, nullptr, MS_BIND, nullptr) != 0) unlink(staged);
        break;
      }
    }
  }
  const char* termination = plan.termination_staged.c_str();
  int fd = open(termination, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
  if (mount(plan.termination_source.c_str(), termination, nullptr, MS_BIND, nullptr) != 0) {
    return termination;
  }
  if (mount(staging, "/dev", nullptr, MS_MOVE, nullptr) != 0) return "/dev";
  return nullptr;
}

}  // namespace banlieue::roles::devnode
