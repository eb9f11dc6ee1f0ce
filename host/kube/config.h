// Where the Kubernetes API is and who we are to it: kubeconfig files (merged as client-go
// merges KUBECONFIG) and the in-cluster service account.
#pragma once

#include "host/common/status_or.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::kube {

// Everything a transport needs to reach and authenticate to one API server.
struct Connection {
  std::string server;  // https://host:port (no trailing slash)
  std::string ca_pem;  // trusted CA bundle; empty = system trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // SNI / verification name override
  std::string client_cert_pem;  // client certificate identity
  std::string client_key_pem;
  std::string token;                 // bearer token (static)
  std::filesystem::path token_file;  // bearer token re-read when it changes (in-cluster)
  std::string default_namespace = "default";
  std::string source;  // where this came from, for messages ("kubeconfig /x, context y")

  // The bearer token to send now (re-reads token_file; rotated tokens are picked up).
  std::string bearerToken() const;
};

struct KubeconfigOptions {
  // Files to merge, first wins for each named entry (client-go's KUBECONFIG rule). Empty =
  // $KUBECONFIG, else ~/.kube/config.
  std::vector<std::filesystem::path> files;
  std::optional<std::string> context;  // --context; default: current-context
};

// Reads and merges kubeconfig files. Errors name the file and the missing field.
StatusOr<Connection> loadKubeconfig(const KubeconfigOptions& options);

// The pod's service account: KUBERNETES_SERVICE_HOST/PORT, token, CA and namespace under
// `root` (default /var/run/secrets/kubernetes.io/serviceaccount).
StatusOr<Connection> loadInClusterConfig(
    const std::filesystem::path& root = "/var/run/secrets/kubernetes.io/serviceaccount");

// --kubeconfig when given, else $KUBECONFIG, else in-cluster when running in a pod, else
// ~/.kube/config.
StatusOr<Connection> loadDefaultConfig(const std::optional<std::filesystem::path>& kubeconfig,
                                       const std::optional<std::string>& context);

// Splits a KUBECONFIG value on ':' (empty entries skipped).
std::vector<std::filesystem::path> splitKubeconfigEnv(const std::string& value);

}  // namespace banlieue::kube
