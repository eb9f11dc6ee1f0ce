// The whole content of a file, byte for byte; empty when it cannot be read (tests compare the
// content, so a missing file shows up as a mismatch).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace banlieue::testing {

inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace banlieue::testing
