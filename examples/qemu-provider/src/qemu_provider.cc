// The "qemu" backend: every machine is a qemu-system-x86_64 process this plugin starts and
// drives over QMP itself, with its disks and sockets in a state directory on the provider's
// host (README.md). This file is the SDK glue: describe, validate, instance_create and the
// slots, each handed to the class that does the work.
#include <banlieue/sdk/plugin.h>
#include <unistd.h>

#include <string>

#include "backend_config.h"
#include "machine_reconciler.h"
#include "machine_spec.h"

namespace {

namespace json = banlieue::sdk::json;
using banlieue::sdk::Call;
using banlieue::sdk::Code;
using banlieue::sdk::Reply;
using banlieue::sdk::Status;
using qemu_provider::BackendConfig;
using qemu_provider::MachineReconciler;

constexpr std::string_view kKind = "QemuMachine";
constexpr std::string_view kGroup = "infrastructure.qemu.example.com";

Status unsupportedKind(const std::string& kind) {
  return {Code::kInvalidArgument, "UnsupportedKind",
          "the qemu provider serves QemuMachine, not " + kind};
}

class QemuInstance final : public banlieue::sdk::Instance {
 public:
  explicit QemuInstance(MachineReconciler reconciler) : reconciler_(std::move(reconciler)) {}

  // One failure domain, this host: every machine runs here. A machine has no NIC and its
  // disks are files in the state directory, so any storage or network class the Provider
  // declares is as good as another.
  Status introspect(const Call&, const banlieue::sdk::IntrospectRequest& request,
                    Reply& reply) override {
    auto& a = reply.allocator();
    rapidjson::Value labels(rapidjson::kObjectType);
    labels.AddMember("host", json::stringValue(reconciler_.host(), a), a);
    labels.AddMember("accel", json::stringValue(reconciler_.config().accel, a), a);
    rapidjson::Value attributes(rapidjson::kObjectType);
    attributes.AddMember("availableStorageClasses",
                         declaredClasses(request.provider, "storageClasses", a), a);
    attributes.AddMember("availableNetworkClasses",
                         declaredClasses(request.provider, "networkClasses", a), a);
    rapidjson::Value domain(rapidjson::kObjectType);
    domain.AddMember("name", "local", a);
    domain.AddMember("labels", labels, a);
    domain.AddMember("attributes", attributes, a);
    rapidjson::Value domains(rapidjson::kArrayType);
    domains.PushBack(domain, a);
    reply.body().AddMember("failureDomains", domains, a);
    return Status::ok();
  }

  Status reconcile(const Call& call, const banlieue::sdk::ReconcileRequest& request,
                   Reply& reply) override {
    if (request.kind != kKind) return unsupportedKind(request.kind);
    return reconciler_.reconcile(call, request, reply);
  }

  Status finalize(const Call& call, const banlieue::sdk::ReconcileRequest& request,
                  Reply& reply) override {
    if (request.kind != kKind) return unsupportedKind(request.kind);
    return reconciler_.finalize(call, request, reply);
  }

 private:
  // The names of the Provider's spec.capabilities.<list> entries.
  static rapidjson::Value declaredClasses(const rapidjson::Value* provider, const char* list,
                                          rapidjson::Document::AllocatorType& a) {
    rapidjson::Value names(rapidjson::kArrayType);
    const auto* entries = json::member(json::find(provider, "spec.capabilities"), list);
    if (entries == nullptr || !entries->IsArray()) return names;
    for (const auto& entry : entries->GetArray()) {
      std::string name = json::stringOr(&entry, "name");
      if (!name.empty()) names.PushBack(json::stringValue(name, a), a);
    }
    return names;
  }

  MachineReconciler reconciler_;
};

class QemuProvider final : public banlieue::sdk::Provider {
 public:
  std::string_view name() const override { return "qemu"; }
  std::string_view version() const override { return "0.1.0"; }

  banlieue::sdk::Capabilities capabilities() const override {
    banlieue::sdk::Capabilities caps;
    caps.backend = "qemu";
    caps.kinds.push_back({std::string(kGroup),
                          "v1alpha1",
                          std::string(kKind),
                          {"reconcile", "finalize", "validate"}});
    caps.introspect = true;
    caps.features = {"qmp", "no-network"};
    return caps;
  }

  // No I/O: the same parsers reconcile and instance_create use, on the object alone.
  Status validate(const Call&, const banlieue::sdk::ValidateRequest& request,
                  Reply&) const override {
    if (request.kind == "Provider") {
      (void)BackendConfig::parse(json::stringOr(request.object, "spec.connection.endpoint"));
      return Status::ok();
    }
    if (request.kind != kKind) return unsupportedKind(request.kind);
    (void)qemu_provider::MachineSpec::parse(json::member(request.object, "spec"));
    return Status::ok();
  }

  std::unique_ptr<banlieue::sdk::Instance> createInstance(
      const Call&, banlieue::sdk::InstanceConfig config) override {
    BackendConfig backend = BackendConfig::parse(config.endpoint);
    backend.resolve();
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    BANLIEUE_LOG(kInfo, "qemu backend in " + backend.state_dir.string() + ", accel " +
                            backend.accel + " (asked: " + backend.accel_requested + ")");
    return std::make_unique<QemuInstance>(MachineReconciler(std::move(backend), host));
  }
};

}  // namespace

BANLIEUE_PROVIDER_PLUGIN(QemuProvider)
