#include "host/plugin/file_checks.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace banlieue::plugin {
namespace {

std::string ownershipProblem(const struct stat& st) {
  if (st.st_uid != 0 && st.st_uid != geteuid()) {
    return "is owned by uid " + std::to_string(st.st_uid) +
           ", neither root nor this process's user";
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return "is writable by group or others";
  return {};
}

}  // namespace

bool isInside(const std::filesystem::path& child, const std::filesystem::path& root) {
  auto c = child.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++c) {
    if (c == child.end() || *c != *r) return false;
  }
  return true;
}

Status checkTrustedPath(const std::filesystem::path& directory) {
  struct stat st {};
  if (::stat(directory.c_str(), &st) != 0) {
    return error(Code::kNotFound, "PluginDirectoryMissing",
                 directory.string() + ": " + std::strerror(errno));
  }
  if (auto problem = ownershipProblem(st); !problem.empty()) {
    return error(Code::kPermissionDenied, "PluginDirectoryUntrusted",
                 directory.string() + ": " + problem + "; refusing to load plugins from it");
  }
  return Status::ok();
}

StatusOr<OpenFile> openTrustedFile(const std::filesystem::path& directory, const std::string& name,
                                   const std::string& what) {
  auto path = directory / name;
  UniqueFd dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    return error(Code::kNotFound, "PluginDirectoryMissing",
                 directory.string() + ": " + std::strerror(errno));
  }
  OpenFile file;
  file.fd =
      UniqueFd(::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (file.fd.get() < 0) {
    int err = errno;
    if (err == ELOOP) {
      return error(Code::kPermissionDenied, "PluginFileIsSymlink",
                   path.string() + ": " + what + " is a symlink; plugins must ship regular files");
    }
    return error(Code::kNotFound, err == ENOENT ? "PluginFileMissing" : "PluginFileUnreadable",
                 path.string() + ": " + what + " " +
                     (err == ENOENT ? std::string("does not exist") : std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(file.fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return error(Code::kFailedPrecondition, "PluginFileNotRegular",
                 path.string() + ": " + what + " is not a regular file");
  }
  if (auto problem = ownershipProblem(st); !problem.empty()) {
    return error(Code::kPermissionDenied, "PluginFileUntrusted",
                 path.string() + ": " + what + " " + problem + "; refusing to use it");
  }
  file.device = st.st_dev;
  file.inode = st.st_ino;
  file.size = st.st_size;
  return file;
}

}  // namespace banlieue::plugin
