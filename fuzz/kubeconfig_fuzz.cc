// A kubeconfig file as loadKubeconfig reads it (YAML, merged entries, base64 *-data fields,
// relative file references), with exec credential plugins denied so no input runs a command.
// Any bytes must give a Connection or an error Status, never a crash or an exception.
// Properties: a loaded connection has a server without a trailing slash, and a client
// certificate only together with its key.
#include "fuzz/quiet_logging.h"
#include "host/kube/config.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

// One private folder per process, removed at exit; the input is the only file in it. Never
// freed: the exit handler runs after static destructors would have.
const std::filesystem::path& kubeconfigPath() {
  static const std::filesystem::path* path = [] {
    std::string dir = (std::filesystem::temp_directory_path() / "banlieue-fuzz-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) std::abort();
    auto* file = new std::filesystem::path(std::filesystem::path(dir) / "config");
    std::atexit([] { std::filesystem::remove_all(kubeconfigPath().parent_path()); });
    return file;
  }();
  return *path;
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  banlieue::fuzz::silenceLoggingOnce();
  const auto& path = kubeconfigPath();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  banlieue::kube::KubeconfigOptions options;
  options.files = {path};
  options.allow_exec_plugins = false;
  auto connection = banlieue::kube::loadKubeconfig(options);
  if (connection.ok()) {
    if (connection->server.empty() || connection->server.back() == '/') std::abort();
    if (connection->client_cert_pem.empty() != connection->client_key_pem.empty()) std::abort();
    if (connection->token_source != nullptr) std::abort();  // exec plugins are denied
  }
  return 0;
}
