// The libvirt provider plugin: one Instance (one libvirt connection) per banlieue Provider,
// serving LibvirtMachine (and its snapshots), introspection and image import. Exported through the
// SDK's trampolines, so nothing throws across the ABI.
#include "plugins/libvirt/src/connection.h"
#include "plugins/libvirt/src/console.h"
#include "plugins/libvirt/src/image_import.h"
#include "plugins/libvirt/src/introspection.h"
#include "plugins/libvirt/src/libvirt_handles.h"
#include "plugins/libvirt/src/machine.h"
#include "plugins/libvirt/src/machine_spec.h"
#include "plugins/libvirt/src/provider_validation.h"
#include "plugins/libvirt/src/snapshots.h"

#include <banlieue/sdk/change_log.h>
#include <banlieue/sdk/plugin.h>

#include <mutex>

namespace banlieue::libvirt {
namespace {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;

constexpr std::string_view kDomainTypeAnnotation = "libvirt.banlieue.io/domain-type";

Status unsupportedKind(const std::string& kind) {
  return {Code::kInvalidArgument, "UnsupportedKind",
          "the libvirt provider serves LibvirtMachine, not " + kind};
}

std::string annotation(const rapidjson::Value* object, std::string_view key) {
  const auto* annotations = json::find(object, "metadata.annotations");
  if (annotations == nullptr || !annotations->IsObject()) return {};
  // Annotation keys contain dots, so no dotted-path lookup here.
  const rapidjson::Value name(
      rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size())));
  auto it = annotations->FindMember(name);
  return it != annotations->MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

class LibvirtInstance final : public sdk::Instance {
 public:
  LibvirtInstance(const sdk::Call& call, sdk::InstanceConfig config)
      : connection_(config, call),
        importer_(connection_,
                  json::stringOr(config.provider, "spec.providerClassRef.name", "libvirt"),
                  declaredPools(config.provider)) {
    domain_type_ = annotation(config.provider, kDomainTypeAnnotation);
    if (!domain_type_.empty() && domain_type_ != "kvm" && domain_type_ != "qemu" &&
        domain_type_ != "test") {
      throw sdk::Error(Code::kInvalidArgument, "InvalidAnnotation",
                       std::string(kDomainTypeAnnotation) + " must be kvm or qemu");
    }
    // The credentials are on disk in the private pki directory now; drop the parsed copies.
    config.credentials.wipe();
    BANLIEUE_LOG(kInfo, "connected to " + connection_.uri());
  }

  Status introspect(const sdk::Call& call, const sdk::IntrospectRequest& request,
                    sdk::Reply& reply) override {
    std::string fd;
    Status status = introspectHost(connection_, call, request.provider, reply, &fd);
    std::lock_guard lock(mutex_);
    failure_domain_ = fd;
    return status;
  }

  Status reconcile(const sdk::Call& call, const sdk::ReconcileRequest& request,
                   sdk::Reply& reply) override {
    if (request.kind != kMachineKind) return unsupportedKind(request.kind);
    MachineContext ctx{connection_, domain_type_, failureDomain(call)};
    return reconcileMachine(ctx, call, request, reply);
  }

  Status finalize(const sdk::Call& call, const sdk::ReconcileRequest& request,
                  sdk::Reply& reply) override {
    if (request.kind != kMachineKind) return unsupportedKind(request.kind);
    MachineContext ctx{connection_, domain_type_, {}};
    return finalizeMachine(ctx, call, request, reply);
  }

  Status importImage(const sdk::Call& call, const sdk::ImportImageRequest& request,
                     sdk::Reply& reply) override {
    return importer_.importImage(call, request, reply);
  }

  Status deleteImage(const sdk::Call& call, const sdk::DeleteImageRequest& request,
                     sdk::Reply& /*reply*/) override {
    return importer_.deleteImage(call, request);
  }

  Status snapshot(const sdk::Call& call, const sdk::SnapshotRequest& request,
                  sdk::Reply& reply) override {
    if (request.kind != kMachineKind) return unsupportedKind(request.kind);
    return snapshotMachine(connection_, call, request, reply);
  }

  Status openConsole(const sdk::Call& call, const sdk::ConsoleRequest& request,
                     std::unique_ptr<sdk::Console>& out, sdk::Reply& reply) override {
    if (request.kind != kMachineKind) return unsupportedKind(request.kind);
    return openMachineConsole(connection_, call, request, out, reply);
  }

  // SINCE ABI 1.4. The change feed: libvirt's domain lifecycle events, pushed by the daemon
  // over the open connection, name the domains that changed; between them nothing is asked of
  // the daemon (its own keepalive aside), however many machines there are. A reconnect may have
  // missed events: the next answer is "all". Each wait is a second, so that a cancelled call
  // (a shutdown, a lost Lease) returns at once.
  Status watchChanges(const sdk::Call& call, const sdk::WatchRequest& request,
                      sdk::Reply& reply) override {
    std::call_once(following_, [&] {
      connection_.followDomains(
          call, [this](const std::string& uuid) { changes_.record(providerIdFor(uuid)); },
          [this] { changes_.recordAll(); });
    });
    return changes_.answer(call, request, reply, [&](std::chrono::milliseconds budget) {
      ConnRef alive(connection_.acquire(call));  // reopens a connection the daemon dropped
      changes_.waitForNews(std::min<std::chrono::milliseconds>(budget, std::chrono::seconds(1)));
    });
  }

  void shutdown(const sdk::Call& /*call*/) override { importer_.shutdown(); }

 private:
  // This host's failure domain: known after introspect, else read once from the host name.
  std::string failureDomain(const sdk::Call& call) {
    {
      std::lock_guard lock(mutex_);
      if (!failure_domain_.empty()) return failure_domain_;
    }
    ConnRef conn(connection_.acquire(call));
    CString hostname(virConnectGetHostname(conn.get()));
    if (!hostname) return {};
    std::lock_guard lock(mutex_);
    failure_domain_ = failureDomainName(hostname.get());
    return failure_domain_;
  }

  // Before connection_: its event callbacks write here until connection_ is gone.
  sdk::ChangeLog changes_;
  std::once_flag following_;
  Connection connection_;
  ImageImporter importer_;
  std::string domain_type_;
  std::mutex mutex_;
  std::string failure_domain_;  // guarded by mutex_
};

class LibvirtProvider final : public sdk::Provider {
 public:
  std::string_view name() const override { return "libvirt"; }
  std::string_view version() const override { return "0.1.0"; }

  sdk::Capabilities capabilities() const override {
    sdk::Capabilities caps;
    caps.backend = "libvirt";
    caps.kinds.push_back({"infrastructure.banlieue.io",
                          "v1beta2",
                          std::string(kMachineKind),
                          {"reconcile", "finalize", "validate"}});
    caps.features = {"vtpm", "efiSecureBoot", "nestedVirtualization"};
    caps.introspect = true;
    caps.import_image = true;
    caps.delete_image = true;
    caps.snapshot = true;
    caps.console = true;
    caps.watch_changes = true;
    caps.image_formats = {"raw", "qcow2", "iso"};
    return caps;
  }

  Status validate(const sdk::Call& /*call*/, const sdk::ValidateRequest& request,
                  sdk::Reply& /*reply*/) const override {
    return validateObject(request);
  }

  std::unique_ptr<sdk::Instance> createInstance(const sdk::Call& call,
                                                sdk::InstanceConfig config) override {
    // Before connecting: the test:// endpoint is refused by the Connection the same way.
    if (annotation(config.provider, kDomainTypeAnnotation) == "test" && !config.allow_test_driver) {
      throw testDriverNotAllowed(std::string(kDomainTypeAnnotation) + ": test");
    }
    return std::make_unique<LibvirtInstance>(call, std::move(config));
  }
};

}  // namespace
}  // namespace banlieue::libvirt

BANLIEUE_PROVIDER_PLUGIN(banlieue::libvirt::LibvirtProvider)
