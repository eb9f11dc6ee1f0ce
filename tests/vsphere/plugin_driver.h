// Drives the real libbanlieue-provider-vsphere.so through the C ABI (dlopen + the SDK's fake
// host), and inspects vcsim independently of the plugin's decisions (inventory snapshots for
// leak checks, out-of-band changes such as destroying a VM under the plugin's feet).
#pragma once

#include "plugins/vsphere/src/vim.h"
#include "tests/vsphere/vcsim.h"

#include <banlieue/sdk/testing/fake_host.h>

#include <chrono>
#include <map>
#include <set>
#include <string>

namespace banlieue::vsphere::testing {

class PluginDriver {
 public:
  PluginDriver();
  ~PluginDriver();

  sdk::abi::CallOutcome create(const std::string& config);
  void destroy();
  bool hasInstance() const { return instance_ != nullptr; }

  sdk::abi::CallOutcome introspect(const std::string& request);
  // Calls reconcile/finalize/import/delete_image/snapshot until the answer is not IN_PROGRESS (at
  // most `polls`), feeding each reply's operation token into the next request. `request_without_op`
  // is a JSON object text whose closing brace the driver extends with the operation.
  sdk::abi::CallOutcome drive(const std::string& slot, const std::string& kind,
                              const std::string& uid, const std::string& request, int polls = 200);
  // One call of `slot`; `kind` is not sent to the slots whose request names it (snapshot,
  // import_image, delete_image, console_open; a console it opens is closed at once).
  sdk::abi::CallOutcome once(const std::string& slot, const std::string& kind,
                             const std::string& uid, const std::string& request);

  // The change feed (ABI 1.4) as the host's long poll calls it: the Provider's uid, `timeout`.
  sdk::abi::CallOutcome watchChanges(const std::string& cursor, std::chrono::milliseconds timeout);

  sdk::testing::FakeHost& host() { return host_; }

 private:
  void* handle_ = nullptr;
  sdk::testing::FakeHost& host_ = sdk::testing::FakeHost::shared();
  sdk::abi::ProviderClient client_;
  banlieue_instance* instance_ = nullptr;
};

// A client of our own on vcsim for assertions and out-of-band changes.
class Backend {
 public:
  explicit Backend(const Vcsim& vcsim);

  std::set<std::string> vmNames();  // every VM and template
  std::set<std::string> folderNames();
  std::set<std::string> datastoreFiles();  // relative paths under every datastore directory
  std::optional<ObjectContent> vm(const std::string& name, const std::vector<std::string>& paths);
  void runTask(const std::string& method, const MoRef& self, const std::string& args = {});
  MoRef find(const std::string& inventory_path);
  Vim& vim() { return vim_; }
  Deadline deadline() const;

 private:
  std::unique_ptr<SoapClient> client_;
  Vim vim_;
  std::vector<PropertyResult> keep_;
};

std::string objectJson(const std::string& uid, const std::string& spec,
                       const std::string& status = "{}");

}  // namespace banlieue::vsphere::testing
