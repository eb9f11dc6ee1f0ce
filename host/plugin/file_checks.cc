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

StatusOr<UniqueFd> openTrustedDirectory(const std::filesystem::path& root,
                                        const std::filesystem::path& relative) {
  // O_PATH: a directory needs search permission, not read permission, to be walked.
  constexpr int kFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  std::filesystem::path path = root;
  std::string name = root.string();
  UniqueFd parent;  // where `name` was opened; none for the root
  UniqueFd current(::open(root.c_str(), kFlags));
  int open_errno = errno;
  auto component = relative.begin();
  for (;;) {
    if (current.get() < 0) {
      struct stat link {};
      if ((open_errno == ELOOP || open_errno == ENOTDIR) &&
          ::fstatat(parent.get() >= 0 ? parent.get() : AT_FDCWD, name.c_str(), &link,
                    AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(link.st_mode)) {
        return error(Code::kPermissionDenied, "PluginDirectoryIsSymlink",
                     path.string() +
                         ": is a symlink (it changed after the path was resolved); refusing to "
                         "load plugins through it");
      }
      return error(Code::kNotFound, "PluginDirectoryMissing",
                   path.string() + ": " + std::strerror(open_errno));
    }
    struct stat st {};
    if (::fstat(current.get(), &st) != 0) {
      return error(Code::kNotFound, "PluginDirectoryMissing",
                   path.string() + ": " + std::strerror(errno));
    }
    if (auto problem = ownershipProblem(st); !problem.empty()) {
      return error(Code::kPermissionDenied, "PluginDirectoryUntrusted",
                   path.string() + ": " + problem + "; refusing to load plugins from it");
    }
    while (component != relative.end() && (component->empty() || *component == ".")) ++component;
    if (component == relative.end()) return current;
    name = component->string();
    ++component;
    if (name == ".." || name == "/") {
      return error(Code::kInvalidArgument, "PluginDirectoryMissing",
                   path.string() + ": '" + name + "' is not a directory name below it");
    }
    path /= name;
    parent = std::move(current);
    current = UniqueFd(::openat(parent.get(), name.c_str(), kFlags));
    open_errno = errno;
  }
}

StatusOr<OpenFile> openTrustedFile(const std::filesystem::path& directory, const std::string& name,
                                   const std::string& what) {
  UniqueFd dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    return error(Code::kNotFound, "PluginDirectoryMissing",
                 directory.string() + ": " + std::strerror(errno));
  }
  return openTrustedFileAt(dir.get(), directory, name, what);
}

StatusOr<OpenFile> openTrustedFileAt(int directory_fd, const std::filesystem::path& directory,
                                     const std::string& name, const std::string& what) {
  auto path = directory / name;
  OpenFile file;
  file.fd = UniqueFd(
      ::openat(directory_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
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
