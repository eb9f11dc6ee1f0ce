// The one piece of a kubelet's HTTPS API that `kubectl logs` needs: the kube-apiserver proxies
// GET /containerLogs/{namespace}/{pod}/{container} to the node's InternalIP and
// daemonEndpoints.kubeletEndpoint.Port. Served over TLS with a certificate from the cluster's
// CA; only clients presenting a certificate from that CA (the apiserver's kubelet client
// certificate) are answered, as a kubelet with x509 client authentication does.
// Supports tailLines, limitBytes and follow (streamed until the client goes away, the pod's
// directory disappears or the server stops).
#pragma once

#include "host/common/status_or.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace banlieue::roles::devnode {

struct LogRequest {
  std::string ns;
  std::string pod;
  std::string container;
  std::optional<int64_t> tail_lines;
  std::optional<int64_t> limit_bytes;
  bool follow = false;
};

// Parses a request target such as "/containerLogs/ns/pod/c?tailLines=10&follow=true".
// NotFound for another path, InvalidArgument for a malformed query value or `previous=true`
// (a dev node keeps no previous container's log).
StatusOr<LogRequest> parseLogRequest(std::string_view target);

// The last `lines` lines of `content` (a trailing newline does not start a line).
std::string_view lastLines(std::string_view content, int64_t lines);

// The log file of a container of the pod ns/name under the agent's pods directory
// (`<pods>/<ns>_<name>_<uid>/<container>.log`), if the pod runs here.
std::optional<std::filesystem::path> findContainerLog(const std::filesystem::path& pods_dir,
                                                      const LogRequest& request);

struct LogServerOptions {
  std::string address = "127.0.0.1";
  int port = 0;  // 0 picks a free port
  std::filesystem::path cert_file;
  std::filesystem::path key_file;
  std::filesystem::path client_ca_file;
  std::filesystem::path pods_dir;
};

class LogServer {
 public:
  explicit LogServer(LogServerOptions options);
  ~LogServer();  // stops serving
  LogServer(const LogServer&) = delete;
  LogServer& operator=(const LogServer&) = delete;

  // Loads the certificates, binds and serves on background threads.
  Status start();
  int port() const;
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace banlieue::roles::devnode
