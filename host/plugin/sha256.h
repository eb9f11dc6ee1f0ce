#pragma once

#include "host/common/status_or.h"

#include <filesystem>
#include <string>
#include <string_view>

namespace banlieue::plugin {

// Lowercase hex SHA-256 of a file's content, streamed (never loads the whole file).
StatusOr<std::string> sha256File(const std::filesystem::path& file);

// Lowercase hex SHA-256 of bytes in memory.
std::string sha256Hex(std::string_view data);

// The same for an open descriptor, read from offset 0 with pread (the offset is untouched).
StatusOr<std::string> sha256Fd(int fd);

}  // namespace banlieue::plugin
