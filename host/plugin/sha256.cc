#include "host/plugin/sha256.h"

#include "host/plugin/file_checks.h"

#include <banlieue/sdk/digest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <array>

namespace banlieue::plugin {

std::string sha256Hex(std::string_view data) {
  return sdk::sha256Hex(data);
}

StatusOr<std::string> sha256Fd(int fd) {
  sdk::Digest digest("sha256");
  std::array<char, 1 << 16> buffer{};
  off_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buffer.data(), buffer.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return error(Code::kDataLoss, "FileUnreadable",
                   std::string("sha256: ") + std::strerror(errno));
    if (n == 0) break;
    digest.update(buffer.data(), static_cast<size_t>(n));
    offset += n;
  }
  return digest.hex();
}

StatusOr<std::string> sha256File(const std::filesystem::path& file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    return error(Code::kNotFound, "FileUnreadable", file.string() + ": cannot be read");
  auto digest = sha256Fd(fd.get());
  if (!digest.ok())
    return error(digest.status().code(), digest.status().reason(),
                 file.string() + ": " + digest.status().message());
  return digest;
}

}  // namespace banlieue::plugin
