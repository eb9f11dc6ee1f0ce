#include "host/roles/devnode/termination_message.h"

#include "host/roles/devnode/log_server.h"

#include <algorithm>
#include <fstream>

namespace banlieue::roles::devnode {
namespace {

constexpr std::streamsize kMaxMessageBytes = 4096;
constexpr std::streamoff kMaxLogTailBytes = 2048;
constexpr int kMaxLogTailLines = 80;

std::string logTail(const std::filesystem::path& log_file) {
  std::ifstream in(log_file, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::streamoff size = in.tellg();
  std::streamoff start = std::max<std::streamoff>(0, size - kMaxLogTailBytes);
  in.seekg(start);
  std::string tail(static_cast<size_t>(size - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  return std::string(lastLines(tail, kMaxLogTailLines));
}

}  // namespace

std::string readTerminationMessage(const std::filesystem::path& termination_file,
                                   const std::filesystem::path& log_file, const std::string& policy,
                                   int exit_code) {
  std::string message;
  if (std::ifstream in(termination_file, std::ios::binary); in) {
    message.resize(kMaxMessageBytes);
    in.read(message.data(), kMaxMessageBytes);
    message.resize(static_cast<size_t>(in.gcount()));
  }
  if (message.empty() && policy == "FallbackToLogsOnError" && exit_code != 0) {
    message = logTail(log_file);
  }
  return message;
}

}  // namespace banlieue::roles::devnode
