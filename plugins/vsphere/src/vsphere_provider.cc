// The vSphere provider plugin: exports banlieue_provider_v1 through the SDK. One instance per
// banlieue Provider holds one logged-in SoapClient that every call of that Provider reuses, and
// a second one, with its own connection and session, for the change feed's long poll.
#include "plugins/vsphere/src/change_feed.h"
#include "plugins/vsphere/src/console.h"
#include "plugins/vsphere/src/errors.h"
#include "plugins/vsphere/src/image_import.h"
#include "plugins/vsphere/src/inventory.h"
#include "plugins/vsphere/src/machine.h"
#include "plugins/vsphere/src/machine_spec.h"
#include "plugins/vsphere/src/snapshots.h"

#include <banlieue/sdk/https_settings.h>
#include <banlieue/sdk/plugin.h>

namespace banlieue::vsphere {
namespace {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;

constexpr std::string_view kMachineKind = "VSphereMachine";

class VSphereInstance final : public sdk::Instance {
 public:
  VSphereInstance(std::unique_ptr<SoapClient> client, std::unique_ptr<SoapClient> feed_client,
                  ProviderSpec spec)
      : client_(std::move(client)),
        feed_client_(std::move(feed_client)),
        spec_(std::move(spec)),
        vim_(*client_),
        machines_(vim_),
        images_(vim_),
        snapshots_(vim_),
        consoles_(vim_),
        feed_(*feed_client_) {}

  Status introspect(const sdk::Call& call, const sdk::IntrospectRequest& request,
                    sdk::Reply& reply) override {
    // The Provider as it is now: its classes may have changed since instance_create.
    ProviderSpec spec = request.provider != nullptr ? ProviderSpec::parse(request.provider) : spec_;
    if (spec.name.empty()) spec.name = spec_.name;
    const Deadline deadline = call.deadline();
    return withVimErrors("introspection of " + client_->url().origin(), [&]() -> Status {
      Inventory inventory = Inventory::load(vim_, deadline);
      std::vector<FailureDomain> fds = computeFailureDomains(inventory, spec);
      auto& a = reply.allocator();
      rapidjson::Value list(rapidjson::kArrayType);
      for (const auto& fd : fds) {
        rapidjson::Value labels(rapidjson::kObjectType);
        labels.AddMember("datacenter", json::stringValue(fd.datacenter, a), a);
        labels.AddMember("cluster", json::stringValue(fd.cluster, a), a);
        labels.AddMember("name", json::stringValue(fd.name, a), a);
        rapidjson::Value raw(rapidjson::kObjectType);
        raw.AddMember("datacenter", json::stringValue(fd.datacenter, a), a);
        raw.AddMember("cluster", json::stringValue(fd.cluster, a), a);
        rapidjson::Value attributes(rapidjson::kObjectType);
        attributes.AddMember("availableStorageClasses", json::stringArray(fd.storage_classes, a),
                             a);
        attributes.AddMember("availableNetworkClasses", json::stringArray(fd.network_classes, a),
                             a);
        attributes.AddMember("features", json::stringArray(fd.features, a), a);
        attributes.AddMember("raw", raw, a);
        rapidjson::Value entry(rapidjson::kObjectType);
        entry.AddMember("name", json::stringValue(fd.name, a), a);
        entry.AddMember("labels", labels, a);
        entry.AddMember("attributes", attributes, a);
        list.PushBack(entry, a);
      }
      reply.body().AddMember("failureDomains", list, a);
      reply.body().AddMember("features", json::stringArray(spec.features, a), a);
      if (fds.empty()) {
        return Status{Code::kFailedPrecondition, "NoFailureDomains",
                      "vCenter " + client_->url().origin() + " has no clusters"};
      }
      return Status::ok();
    });
  }

  Status reconcile(const sdk::Call& call, const sdk::ReconcileRequest& request,
                   sdk::Reply& reply) override {
    if (request.kind != kMachineKind) return unsupported(request.kind);
    return machines_.reconcile(call, request, reply);
  }

  Status finalize(const sdk::Call& call, const sdk::ReconcileRequest& request,
                  sdk::Reply& reply) override {
    if (request.kind != kMachineKind) return unsupported(request.kind);
    return machines_.finalize(call, request, reply);
  }

  Status importImage(const sdk::Call& call, const sdk::ImportImageRequest& request,
                     sdk::Reply& reply) override {
    return images_.import(call, request, spec_, reply);
  }

  Status deleteImage(const sdk::Call& call, const sdk::DeleteImageRequest& request,
                     sdk::Reply& reply) override {
    return images_.remove(call, request, spec_, reply);
  }

  Status snapshot(const sdk::Call& call, const sdk::SnapshotRequest& request,
                  sdk::Reply& reply) override {
    if (request.kind != kMachineKind) return unsupported(request.kind);
    return snapshots_.handle(call, request, reply);
  }

  // A ticket, not a stream: vSphere's console is WebMKS (console.h).
  Status openConsole(const sdk::Call& call, const sdk::ConsoleRequest& request,
                     std::unique_ptr<sdk::Console>& /*out*/, sdk::Reply& reply) override {
    if (request.kind != kMachineKind) return unsupported(request.kind);
    return consoles_.open(call, request, reply);
  }

  // SINCE ABI 1.4. The change feed: one WaitForUpdatesEx long poll for every VM of the vCenter
  // (change_feed.h), so a machine at rest costs vCenter nothing of its own.
  Status watchChanges(const sdk::Call& call, const sdk::WatchRequest& request,
                      sdk::Reply& reply) override {
    return feed_.watch(call, request, reply);
  }

 private:
  static Status unsupported(const std::string& kind) {
    return {Code::kInvalidArgument, "UnsupportedKind",
            "the vsphere provider serves VSphereMachine, not " + kind};
  }

  std::unique_ptr<SoapClient> client_;  // logs out when the instance is destroyed
  // The change feed's: its long poll holds its connection for seconds, which no reconcile waits
  // behind. It logs in at the first watch_changes call.
  std::unique_ptr<SoapClient> feed_client_;
  ProviderSpec spec_;
  Vim vim_;
  MachineReconciler machines_;
  ImageImporter images_;
  SnapshotManager snapshots_;
  ConsoleOpener consoles_;
  ChangeFeed feed_;
};

class VSphereProvider final : public sdk::Provider {
 public:
  std::string_view name() const override { return "vsphere"; }
  std::string_view version() const override { return "0.1.0"; }

  sdk::Capabilities capabilities() const override {
    sdk::Capabilities caps;
    caps.backend = "vsphere";
    caps.kinds.push_back({"infrastructure.banlieue.io",
                          "v1beta2",
                          std::string(kMachineKind),
                          {"reconcile", "finalize", "validate"}});
    caps.features = {"hotAddCPU", "hotAddMemory", "efiSecureBoot", "vtpm"};
    caps.introspect = true;
    caps.import_image = true;
    caps.delete_image = true;
    caps.snapshot = true;
    caps.console = true;
    caps.watch_changes = true;
    caps.image_formats = {"iso"};
    return caps;
  }

  Status validate(const sdk::Call&, const sdk::ValidateRequest& request,
                  sdk::Reply&) const override {
    if (request.kind == kMachineKind) {
      (void)MachineSpec::parse(json::member(request.object, "spec"));
      return Status::ok();
    }
    if (request.kind == "Provider") {
      (void)ProviderSpec::parse(request.object);
      return Status::ok();
    }
    return {Code::kInvalidArgument, "UnsupportedKind",
            "the vsphere provider validates VSphereMachine and Provider, not " + request.kind};
  }

  std::unique_ptr<sdk::Instance> createInstance(const sdk::Call& call,
                                                sdk::InstanceConfig config) override {
    ProviderSpec spec = ProviderSpec::parse(config.provider);
    Url url;
    try {
      url = Url::parse(config.endpoint);
    } catch (const std::invalid_argument& e) {
      throw sdk::Error(Code::kInvalidArgument, "InvalidEndpoint",
                       std::string("spec.connection.endpoint: ") + e.what());
    }
    auto username = config.credentials.get("username");
    auto password = config.credentials.get("password");
    if (!username || username->empty() || !password) {
      throw sdk::Error(Code::kInvalidArgument, "SecretInvalid",
                       "the credentials Secret of Provider " + config.provider_name +
                           " needs the keys 'username' and 'password'");
    }
    const auto settings = sdk::https::connectionSettings(config, url);
    std::unique_ptr<HttpTransport> transport;
    std::unique_ptr<HttpTransport> feed_transport;
    try {
      transport = makeHttpsTransport(url, settings.tls, settings.proxy);
      feed_transport = makeHttpsTransport(url, settings.tls, settings.proxy);
    } catch (const std::invalid_argument& e) {
      throw sdk::Error(Code::kInvalidArgument, "CABundleInvalid",
                       std::string("spec.connection.caBundle: ") + e.what());
    }
    Credentials credentials;
    credentials.username = std::string(*username);
    credentials.password = std::string(*password);
    auto client = std::make_unique<SoapClient>(std::move(transport), url, credentials);
    auto feed_client = std::make_unique<SoapClient>(std::move(feed_transport), url, credentials);
    Status login = withVimErrors("login to " + url.origin(), [&]() -> Status {
      client->connect(call.deadline());
      return Status::ok();
    });
    if (!login.isOk()) throw sdk::Error(login.code(), login.reason(), login.message());
    return std::make_unique<VSphereInstance>(std::move(client), std::move(feed_client),
                                             std::move(spec));
  }
};

}  // namespace
}  // namespace banlieue::vsphere

BANLIEUE_PROVIDER_PLUGIN(banlieue::vsphere::VSphereProvider)
