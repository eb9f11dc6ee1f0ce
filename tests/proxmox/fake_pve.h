// Starts tests/proxmox/fake_pve.py (the contract-faithful fake PVE API, see its header) on a
// free port for one test process, and talks to its test-only /_fake endpoints. It listens on
// loopback unless given an address the test's own cluster made (where its pods reach it).
#pragma once

#include "tests/support/json_escape.h"

#include <banlieue/sdk/json.h>

#include <sys/types.h>

#include <string>

namespace banlieue::proxmox::testing {

class FakePve {
 public:
  static constexpr const char* kUser = "banlieue@pve!provider";
  static constexpr const char* kSecret = "5f1d3c9e-2b7a-4c11-9d0e-8a6b4f2c7e10";
  // Ticket auth: the token's owner, user@realm, with its password.
  static constexpr const char* kPasswordUser = "banlieue@pve";
  static constexpr const char* kPassword = "correct horse battery staple";

  // Throws std::runtime_error when the fake does not come up.
  explicit FakePve(std::string listen_address = "127.0.0.1");
  ~FakePve();
  FakePve(const FakePve&) = delete;
  FakePve& operator=(const FakePve&) = delete;

  std::string url() const { return "https://" + address_ + ":" + std::to_string(port_); }
  const std::string& caPem() const { return ca_pem_; }

  // {"vms": [...], "runningTasks": [...], "nodes": {...}}
  rapidjson::Document state() const;
  // Guests that are not templates (what a test must leave behind: none).
  int guestCount() const;
  void fake(const std::string& path_and_query) const;  // POST /_fake/...

  // An instance_create config for a Provider on this fake. `extra_credentials`: more members
  // of the credentials object, each as ',"key":"value"'.
  std::string instanceConfig(const std::string& token_secret, const std::string& capabilities,
                             bool with_ca = true, const std::string& extra_credentials = {}) const;
  // The same Provider with a password Secret (ticket auth) instead of the token.
  std::string ticketConfig(const std::string& password, const std::string& capabilities) const;
  // The directory behind the fake's "local" storage (its import/ and snippets/ subdirectories
  // are where files uploaded to the node land).
  std::string storageDir() const { return dir_ + "/storage/local"; }

 private:
  std::string request(const std::string& method, const std::string& target) const;

  pid_t pid_ = -1;
  std::string address_;
  int port_ = 0;
  std::string ca_pem_;
  std::string dir_;
};

using ::banlieue::testing::jsonEscape;

}  // namespace banlieue::proxmox::testing
