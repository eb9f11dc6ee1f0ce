// Opening plugin files so that what is checked is what is used: no symlinks, regular files
// only, owned by root or this user, not writable by group or others.
#pragma once

#include "host/common/status_or.h"

#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace banlieue::plugin {

// An owned file descriptor.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

struct OpenFile {
  UniqueFd fd;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
};

// True when `child` is `root` or lies below it (both canonical).
bool isInside(const std::filesystem::path& child, const std::filesystem::path& root);

// A directory the host trusts must not be writable by group or others and must be owned by
// root or the effective user; otherwise anyone could drop a plugin into it.
Status checkTrustedPath(const std::filesystem::path& directory);

// Opens `root` and then each component of `relative` (plain names, no "." or "..") below it,
// one openat(O_NOFOLLOW | O_DIRECTORY) at a time, and checks every directory on the way as
// checkTrustedPath does. Returns the last one's descriptor: whatever is opened through it is
// inside the directories checked, however the paths change meanwhile. Reasons:
// PluginDirectoryMissing, PluginDirectoryIsSymlink, PluginDirectoryUntrusted.
StatusOr<UniqueFd> openTrustedDirectory(const std::filesystem::path& root,
                                        const std::filesystem::path& relative);

// Opens name (a plain name, no '/') in the directory open as `directory_fd` without following
// symlinks and checks it is a regular file, owned by root or us, not writable by group or
// others. `directory` names it in errors, `what` the file ("library named by provider.json").
StatusOr<OpenFile> openTrustedFileAt(int directory_fd, const std::filesystem::path& directory,
                                     const std::string& name, const std::string& what);

// The same, opening `directory` by path first.
StatusOr<OpenFile> openTrustedFile(const std::filesystem::path& directory, const std::string& name,
                                   const std::string& what);

}  // namespace banlieue::plugin
