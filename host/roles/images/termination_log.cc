#include "host/roles/images/termination_log.h"

#include <filesystem>
#include <fstream>

namespace banlieue::roles::images {

void writeTerminationLog(const std::string& path, const std::string& json) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) return;
  if (path == kDefaultTerminationLog && !fs::exists(path, ec)) return;
  if (!fs::exists(fs::path(path).parent_path(), ec)) return;
  std::ofstream out(path, std::ios::trunc);
  if (out) out << json;
}

}  // namespace banlieue::roles::images
