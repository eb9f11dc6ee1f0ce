// Where the Kubernetes API is and who we are to it: kubeconfig files (merged as client-go
// merges KUBECONFIG) and the in-cluster service account.
#pragma once

#include "host/common/status_or.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace banlieue::kube {

// A bearer token that changes while the process runs (an exec credential plugin's): the
// transport asks for it per request, and calls invalidate() after a 401 so the next request
// fetches a fresh one.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual std::string token() = 0;
  virtual void invalidate() = 0;
};

// Everything a transport needs to reach and authenticate to one API server.
struct Connection {
  std::string server;  // https://host:port (no trailing slash)
  std::string ca_pem;  // trusted CA bundle; empty = system trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // SNI / verification name override
  std::string client_cert_pem;  // client certificate identity
  std::string client_key_pem;
  std::string token;                          // bearer token (static)
  std::filesystem::path token_file;           // bearer token re-read when it changes (in-cluster)
  std::shared_ptr<TokenSource> token_source;  // exec plugin tokens, refreshed on expiry/401
  std::string default_namespace = "default";
  std::string source;  // where this came from, for messages ("kubeconfig /x, context y")

  // The bearer token to send now (re-reads token_file; rotated tokens are picked up; an exec
  // plugin's expired token is fetched again).
  std::string bearerToken() const;
  // The server answered 401: drop a cached dynamic token so the next request gets a new one.
  // Returns true when retrying may help.
  bool invalidateToken() const;
};

struct KubeconfigOptions {
  // Files to merge, first wins for each named entry (client-go's KUBECONFIG rule). Empty =
  // $KUBECONFIG, else ~/.kube/config.
  std::vector<std::filesystem::path> files;
  std::optional<std::string> context;  // --context; default: current-context
  // Whether a user's exec credential plugin runs (kuberc's credentialPluginPolicy AllowAll or
  // DenyAll). Denied, a context whose user has `exec` is refused (reason ExecPluginDenied)
  // before anything runs: for reading a kubeconfig whose author is not trusted.
  bool allow_exec_plugins = true;
};

// What an exec credential plugin printed: client.authentication.k8s.io ExecCredential.
struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<std::chrono::system_clock::time_point> expires;  // status.expirationTimestamp
};

// Reads a plugin's standard output. Unauthenticated (reason ExecCredentialFailed, the message
// starting with `what`) when it is not an ExecCredential or carries neither a token nor a
// client certificate.
StatusOr<ExecCredential> parseExecCredential(std::string_view output, const std::string& what);

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
