// The Proxmox VE provider plugin: exports banlieue_provider_v1 through the SDK. One instance
// per banlieue Provider holds one PveClient that every call of that Provider shares (safe for
// concurrent calls), the SSH settings for node files, and the image importer's threads.
#include "plugins/proxmox/src/change_feed.h"
#include "plugins/proxmox/src/console.h"
#include "plugins/proxmox/src/errors.h"
#include "plugins/proxmox/src/image_import.h"
#include "plugins/proxmox/src/inventory.h"
#include "plugins/proxmox/src/machine.h"
#include "plugins/proxmox/src/node_files.h"
#include "plugins/proxmox/src/snapshots.h"
#include "plugins/proxmox/src/specs.h"

#include <banlieue/sdk/https_settings.h>
#include <banlieue/sdk/plugin.h>

#include <algorithm>

namespace banlieue::proxmox {
namespace {

namespace json = sdk::json;
using sdk::Code;
using sdk::Status;

constexpr std::string_view kMachineKind = "ProxmoxMachine";

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::vector<std::string> declaredStorages(const ProviderSpec& spec) {
  std::vector<std::string> out;
  for (const auto& sc : spec.storage_classes) {
    if (std::find(out.begin(), out.end(), sc.storage) == out.end()) out.push_back(sc.storage);
  }
  return out;
}

// The PVE half of the credentials Secret: an API token (username user@realm!tokenid and
// tokenValue) or a password for ticket auth (username user@realm and password).
PveCredentials pveCredentials(const sdk::SecretData& secret, const std::string& provider) {
  PveCredentials out;
  auto username = secret.get("username");
  auto token = secret.get("tokenValue");
  auto password = secret.get("password");
  const bool token_user = username && username->find('!') != std::string_view::npos;
  if (token && !token->empty() && token_user) {
    out.token = std::string(*username) + "=" + std::string(*token);
    return out;
  }
  if (password && !password->empty() && username && !username->empty() && !token_user &&
      username->find('@') != std::string_view::npos) {
    out.username = std::string(*username);
    out.password = std::string(*password);
    return out;
  }
  throw sdk::Error(Code::kInvalidArgument, "SecretInvalid",
                   "the credentials Secret of Provider " + provider +
                       " needs either 'username' (user@realm!tokenid) and 'tokenValue' for an "
                       "API token, or 'username' (user@realm) and 'password' for ticket auth");
}

// The SSH half of the credentials Secret (ADR 0009): a key, the pinned host keys, user, port.
SshSettings sshSettings(const sdk::SecretData& credentials, const std::string& provider) {
  SshSettings ssh;
  if (auto key = credentials.get("sshPrivateKey")) ssh.private_key = std::string(*key);
  if (auto pins = credentials.get("sshKnownHosts")) ssh.known_hosts = std::string(*pins);
  if (auto user = credentials.get("sshUser"); user && !user->empty()) ssh.user = *user;
  if (auto port = credentials.get("sshPort"); port && !port->empty()) {
    try {
      ssh.port = std::stoi(std::string(*port));
    } catch (const std::exception&) {
      ssh.port = 0;
    }
    if (ssh.port <= 0 || ssh.port > 65535) {
      throw sdk::Error(
          Code::kInvalidArgument, "SecretInvalid",
          "sshPort in the credentials Secret of Provider " + provider + " is not a port number");
    }
  }
  if (ssh.configured() && ssh.known_hosts.empty()) {
    throw sdk::Error(Code::kInvalidArgument, "SecretInvalid",
                     "the credentials Secret of Provider " + provider +
                         " has sshPrivateKey but no sshKnownHosts: node host keys must be "
                         "pinned (known_hosts lines, ed25519 or ECDSA)");
  }
  return ssh;
}

class ProxmoxInstance final : public sdk::Instance {
 public:
  ProxmoxInstance(std::unique_ptr<PveClient> client, ProviderSpec spec, SshSettings ssh,
                  std::string provider_class)
      : client_(std::move(client)),
        spec_(std::move(spec)),
        files_(*client_, std::move(ssh)),
        machines_(*client_, files_),
        snapshots_(*client_),
        changes_(*client_),
        importer_(*client_, files_, std::move(provider_class), declaredStorages(spec_)) {}

  Status introspect(const sdk::Call& call, const sdk::IntrospectRequest& request,
                    sdk::Reply& reply) override {
    const Deadline deadline = call.deadline();
    return withPveErrors("introspection of " + client_->endpoint().origin(), [&]() -> Status {
      // The Provider as it is now: its classes may have changed since instance_create.
      ProviderSpec spec =
          request.provider != nullptr ? ProviderSpec::parse(request.provider) : spec_;
      Introspection found = introspectCluster(*client_, spec, deadline);
      auto& a = reply.allocator();
      rapidjson::Value list(rapidjson::kArrayType);
      for (const auto& fd : found.failure_domains) {
        rapidjson::Value labels(rapidjson::kObjectType);
        labels.AddMember("node", json::stringValue(fd.name, a), a);
        rapidjson::Value raw(rapidjson::kObjectType);
        raw.AddMember("node", json::stringValue(fd.name, a), a);
        rapidjson::Value attributes(rapidjson::kObjectType);
        attributes.AddMember("availableStorageClasses", json::stringArray(fd.storage_classes, a),
                             a);
        attributes.AddMember("availableNetworkClasses", json::stringArray(fd.network_classes, a),
                             a);
        attributes.AddMember("features", json::stringArray(spec.features, a), a);
        attributes.AddMember("raw", raw, a);
        rapidjson::Value entry(rapidjson::kObjectType);
        entry.AddMember("name", json::stringValue(fd.name, a), a);
        entry.AddMember("labels", labels, a);
        entry.AddMember("attributes", attributes, a);
        list.PushBack(entry, a);
      }
      reply.body().AddMember("failureDomains", list, a);
      reply.body().AddMember("features", json::stringArray(spec.features, a), a);
      if (!found.offline_nodes.empty()) {
        BANLIEUE_LOG(kInfo,
                     "PVE nodes offline (no failure domain): " + joined(found.offline_nodes));
      }
      if (found.failure_domains.empty()) {
        return {Code::kUnavailable, "NoOnlineNodes",
                "no node of " + client_->endpoint().origin() + " is online"};
      }
      if (!found.missing_storages.empty()) {
        return {Code::kFailedPrecondition, "StorageNotFound",
                "no online node offers " + joined(found.missing_storages)};
      }
      if (!found.missing_bridges.empty()) {
        return {Code::kFailedPrecondition, "BridgeNotFound",
                "no online node offers " + joined(found.missing_bridges)};
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
    return importer_.importImage(call, request, reply);
  }

  Status deleteImage(const sdk::Call& call, const sdk::DeleteImageRequest& request,
                     sdk::Reply& reply) override {
    return importer_.deleteImage(call, request, reply);
  }

  Status snapshot(const sdk::Call& call, const sdk::SnapshotRequest& request,
                  sdk::Reply& reply) override {
    if (request.kind != kMachineKind) return unsupported(request.kind);
    return snapshots_.handle(call, request, reply);
  }

  Status openConsole(const sdk::Call& call, const sdk::ConsoleRequest& request,
                     std::unique_ptr<sdk::Console>& out, sdk::Reply& reply) override {
    if (request.kind != kMachineKind) return unsupported(request.kind);
    return openMachineConsole(*client_, consoles_, call, request, out, reply);
  }

  // SINCE ABI 1.4. The change feed: one listing of the cluster's guests every 10 s compared
  // with the last (change_feed.h), however many machines there are.
  Status watchChanges(const sdk::Call& call, const sdk::WatchRequest& request,
                      sdk::Reply& reply) override {
    return changes_.watch(call, request, reply);
  }

  void shutdown(const sdk::Call& /*call*/) override { importer_.shutdown(); }

 private:
  static Status unsupported(const std::string& kind) {
    return {Code::kInvalidArgument, "UnsupportedKind",
            "the proxmox provider serves ProxmoxMachine, not " + kind};
  }

  std::unique_ptr<PveClient> client_;
  ProviderSpec spec_;
  NodeFiles files_;
  MachineReconciler machines_;
  SnapshotManager snapshots_;
  ConsoleSessions consoles_;
  ChangeFeed changes_;
  ImageImporter importer_;  // last: its threads use the members above
};

class ProxmoxProvider final : public sdk::Provider {
 public:
  std::string_view name() const override { return "proxmox"; }
  std::string_view version() const override { return "0.1.0"; }

  sdk::Capabilities capabilities() const override {
    sdk::Capabilities caps;
    caps.backend = "proxmox";
    caps.kinds.push_back({"infrastructure.banlieue.io",
                          "v1beta2",
                          std::string(kMachineKind),
                          {"reconcile", "finalize", "validate"}});
    caps.features = {"hotAddCPU", "hotAddMemory", "vtpm"};
    caps.introspect = true;
    caps.import_image = true;
    caps.delete_image = true;
    caps.snapshot = true;
    caps.console = true;
    caps.watch_changes = true;
    caps.image_formats = {"qcow2", "raw", "vmdk"};
    return caps;
  }

  Status validate(const sdk::Call&, const sdk::ValidateRequest& request,
                  sdk::Reply&) const override {
    try {
      if (request.kind == kMachineKind) {
        (void)MachineSpec::parse(json::member(request.object, "spec"));
        return Status::ok();
      }
      if (request.kind == "Provider") {
        (void)ProviderSpec::parse(request.object);
        return Status::ok();
      }
    } catch (const std::invalid_argument& e) {
      return {Code::kInvalidArgument, "InvalidSpec", e.what()};
    }
    return {Code::kInvalidArgument, "UnsupportedKind",
            "the proxmox provider validates ProxmoxMachine and Provider, not " + request.kind};
  }

  std::unique_ptr<sdk::Instance> createInstance(const sdk::Call& call,
                                                sdk::InstanceConfig config) override {
    ProviderSpec spec;
    Endpoint endpoint;
    try {
      spec = ProviderSpec::parse(config.provider);
      endpoint = Endpoint::parse(config.endpoint);
    } catch (const std::invalid_argument& e) {
      throw sdk::Error(Code::kInvalidArgument, "InvalidSpec",
                       "Provider " + config.provider_name + ": " + e.what());
    }
    PveCredentials credentials = pveCredentials(config.credentials, config.provider_name);
    const auto settings = sdk::https::connectionSettings(config, endpoint);
    std::unique_ptr<HttpTransport> transport;
    try {
      transport = makeHttpsTransport(endpoint, settings.tls, settings.proxy);
    } catch (const std::invalid_argument& e) {
      throw sdk::Error(Code::kInvalidArgument, "CABundleInvalid",
                       std::string("spec.connection.caBundle: ") + e.what());
    }
    auto client =
        std::make_unique<PveClient>(std::move(transport), endpoint, std::move(credentials));
    SshSettings ssh = sshSettings(config.credentials, config.provider_name);
    config.credentials.wipe();
    // One authenticated request, so a wrong token fails the instance, not a later reconcile.
    Status hello = withPveErrors("connecting to " + endpoint.origin(), [&]() -> Status {
      (void)client->get("/version", call.deadline());
      return Status::ok();
    });
    if (!hello.isOk()) throw sdk::Error(hello.code(), hello.reason(), hello.message());
    return std::make_unique<ProxmoxInstance>(
        std::move(client), std::move(spec), std::move(ssh),
        json::stringOr(config.provider, "spec.providerClassRef.name", "proxmox"));
  }
};

}  // namespace
}  // namespace banlieue::proxmox

BANLIEUE_PROVIDER_PLUGIN(banlieue::proxmox::ProxmoxProvider)
