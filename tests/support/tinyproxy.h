// A real HTTP proxy for tests of HTTPS_PROXY: Debian's tinyproxy on a free loopback port, in
// the foreground, with a log of every request it forwards. The destructor stops it.
#pragma once

#include "tests/support/background_process.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace banlieue::testing {

class TinyProxy {
 public:
  // Tunnels (CONNECT) only to `connect_ports`; `basic_auth` "user:password" makes it ask for
  // credentials. Throws std::runtime_error when it does not come up.
  explicit TinyProxy(const std::vector<int>& connect_ports, const std::string& basic_auth = {});
  ~TinyProxy();
  TinyProxy(const TinyProxy&) = delete;
  TinyProxy& operator=(const TinyProxy&) = delete;

  // http://[credentials@]127.0.0.1:<port>.
  std::string url(const std::string& credentials = {}) const;
  // The request lines it received, e.g. "CONNECT 127.0.0.1:8006 HTTP/1.1", oldest first.
  std::vector<std::string> requests() const;

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  std::unique_ptr<BackgroundProcess> process_;
};

}  // namespace banlieue::testing
