// The project's vcsim (tests/vsphere/vcsim/main.go) as a test fixture: a private CA and server
// certificate made with openssl, the simulator started on a free port of its listen address
// (loopback unless told otherwise) with TLS and a required login, and stopped (or restarted on
// the same port) on demand.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <sys/types.h>

namespace banlieue::vsphere::testing {

class Vcsim {
 public:
  static constexpr const char* kUser = "banlieue@vsphere.local";
  static constexpr const char* kPassword = "n0t-a-real-secret";

  static constexpr const char* kLoopback = "127.0.0.1";

  // extra_args scale the inventory (-dc 3 -cluster 2 ...). listen_address is the IPv4 address
  // vcsim listens on and its server certificate names: a cluster's pods reach the machine only
  // at LocalCluster::podReachableAddress(), not at loopback.
  explicit Vcsim(std::vector<std::string> extra_args = {}, std::string listen_address = kLoopback);
  ~Vcsim();
  Vcsim(const Vcsim&) = delete;
  Vcsim& operator=(const Vcsim&) = delete;

  void stop();
  void start();  // on the same port after stop()
  void restart() {
    stop();
    start();
  }

  const std::string& url() const { return url_; }  // https://<listen address>:<port>/sdk
  std::string caPem() const;
  // A second CA that did not sign the server certificate.
  std::string otherCaPem() const;
  // A Provider's spec.connection (JSON) as a user writes it for this vcsim: the endpoint, the
  // credentials Secret `credentials_secret` (keys username and password: kUser, kPassword)
  // and the CA inline, so TLS is verified.
  std::string providerConnection(const std::string& credentials_secret) const;
  // instance_create config for a Provider named `provider` pointing at this vcsim.
  std::string instanceConfig(const std::string& provider = "vcsim",
                             const std::string& password = kPassword,
                             const std::string& ca_pem = "", bool insecure = false,
                             const std::string& capabilities = "{}") const;

 private:
  std::filesystem::path dir_;
  std::vector<std::string> extra_args_;
  std::string listen_address_;
  std::string port_ = "0";
  std::string url_;
  pid_t pid_ = -1;
};

// Runs a command (argv) and fails the test when it exits non-zero.
void runOrThrow(const std::vector<std::string>& argv);

}  // namespace banlieue::vsphere::testing
