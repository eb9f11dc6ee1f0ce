// The fixture of the controller's tests against the real local apiserver. The test plays the
// provider runtime and the operator: it publishes ProviderClass.status.machineKind and
// Provider.status.failureDomains, writes the infra CR's status and holds (then releases) the
// provider's finalizer. Every write the controller makes goes through a counting client.
#pragma once

#include "host/kube/api_error.h"
#include "host/kube/client.h"
#include "host/roles/controller/manager.h"
#include "host/runtime/object_helpers.h"
#include "tests/integration/deployed_controller.h"
#include "tests/support/local_cluster.h"

#include <banlieue/sdk/json.h>

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

namespace banlieue::controller {

using testing::LocalCluster;
namespace json = sdk::json;

inline const kube::ResourceType kLibvirtMachine{"infrastructure.banlieue.io", "v1beta2",
                                                "libvirtmachines", true};
inline const kube::ResourceType kProxmoxMachine{"infrastructure.banlieue.io", "v1beta2",
                                                "proxmoxmachines", true};

// Forwards to a real client and counts writes, and single-object reads apart, per
// "plural/ns/name".
class CountingClient final : public kube::KubeClient {
 public:
  explicit CountingClient(kube::KubeClient& inner) : inner_(inner) {}

  // From now on this identity may not read `plural` (as RBAC without a backend's ClusterRoles
  // leaves the controller): get, list and watch answer Forbidden as the apiserver does, and a
  // SelfSubjectAccessReview about it answers allowed: false.
  void deny(const std::string& plural) {
    std::lock_guard lock(mu_);
    denied_ = plural;
  }

  StatusOr<rapidjson::Document> get(const kube::ResourceType& t, const std::string& ns,
                                    const std::string& name, const std::string& sub) override {
    if (isDenied(t.plural)) return forbidden(t, "get");
    {
      std::lock_guard lock(mu_);
      ++reads_[t.plural + "/" + ns + "/" + name];
    }
    return inner_.get(t, ns, name, sub);
  }
  StatusOr<rapidjson::Document> list(const kube::ResourceType& t, const std::string& ns,
                                     const kube::ListOptions& o) override {
    if (isDenied(t.plural)) return forbidden(t, "list");
    return inner_.list(t, ns, o);
  }
  StatusOr<rapidjson::Document> create(const kube::ResourceType& t, const std::string& ns,
                                       const std::string& body) override {
    auto doc = json::parse(body, "create");
    if (t.plural == "selfsubjectaccessreviews" &&
        isDenied(json::stringOr(&doc, "spec.resourceAttributes.resource"))) {
      auto answer = json::parse(body, "review");
      auto& a = answer.GetAllocator();
      rapidjson::Value status(rapidjson::kObjectType);
      status.AddMember("allowed", false, a);
      answer.AddMember("status", status, a);
      return answer;
    }
    // A review is a question, not a write.
    if (t.plural != "selfsubjectaccessreviews") count(t, ns, json::stringOr(&doc, "metadata.name"));
    return inner_.create(t, ns, body);
  }
  StatusOr<rapidjson::Document> update(const kube::ResourceType& t, const std::string& ns,
                                       const std::string& name, const std::string& body,
                                       const std::string& sub) override {
    count(t, ns, name);
    return inner_.update(t, ns, name, body, sub);
  }
  StatusOr<rapidjson::Document> patch(const kube::ResourceType& t, const std::string& ns,
                                      const std::string& name, kube::PatchType type,
                                      const std::string& body, const std::string& sub) override {
    count(t, ns, name);
    return inner_.patch(t, ns, name, type, body, sub);
  }
  StatusOr<rapidjson::Document> apply(const kube::ResourceType& t, const std::string& ns,
                                      const std::string& name, const std::string& body,
                                      const kube::ApplyOptions& o) override {
    count(t, ns, name);
    return inner_.apply(t, ns, name, body, o);
  }
  Status remove(const kube::ResourceType& t, const std::string& ns, const std::string& name,
                const kube::DeleteOptions& o) override {
    count(t, ns, name);
    return inner_.remove(t, ns, name, o);
  }
  Status watch(const kube::ResourceType& t, const std::string& ns, const kube::WatchOptions& o,
               const std::function<bool(kube::WatchEvent&)>& on_event,
               const std::atomic<bool>* cancel) override {
    if (isDenied(t.plural)) return forbidden(t, "watch").status();
    return inner_.watch(t, ns, o, on_event, cancel);
  }
  StatusOr<rapidjson::Document> getDiscovery(const std::string& path) override {
    return inner_.getDiscovery(path);
  }

  // Writes to objects (not Events) in `ns` whose name is `name`.
  int objectWrites(const std::string& ns, const std::string& name) const {
    std::lock_guard lock(mu_);
    int total = 0;
    for (const auto& [key, n] : counts_) {
      if (key.rfind("events/", 0) != 0 && key.size() > ns.size() + name.size() &&
          key.substr(key.size() - ns.size() - name.size() - 1) == ns + "/" + name)
        total += n;
    }
    return total;
  }
  // GETs of objects in `ns` whose name is `name`, of any kind.
  int objectReads(const std::string& ns, const std::string& name) const {
    std::lock_guard lock(mu_);
    int total = 0;
    for (const auto& [key, n] : reads_) {
      if (key.size() > ns.size() + name.size() &&
          key.substr(key.size() - ns.size() - name.size() - 1) == ns + "/" + name)
        total += n;
    }
    return total;
  }
  int eventWrites() const {
    std::lock_guard lock(mu_);
    int total = 0;
    for (const auto& [key, n] : counts_)
      if (key.rfind("events/", 0) == 0) total += n;
    return total;
  }
  int total() const {
    std::lock_guard lock(mu_);
    int total = 0;
    for (const auto& [key, n] : counts_) total += n;
    return total;
  }
  std::string describe() const {
    std::lock_guard lock(mu_);
    std::string out;
    for (const auto& [key, n] : counts_) out += key + "=" + std::to_string(n) + " ";
    return out;
  }

 private:
  void count(const kube::ResourceType& t, const std::string& ns, const std::string& name) {
    std::lock_guard lock(mu_);
    ++counts_[t.plural + "/" + ns + "/" + name];
  }
  bool isDenied(const std::string& plural) const {
    std::lock_guard lock(mu_);
    return !denied_.empty() && plural == denied_;
  }
  static StatusOr<rapidjson::Document> forbidden(const kube::ResourceType& t, const char* verb) {
    return Status(Code::kPermissionDenied, "Forbidden",
                  t.plural + "." + t.group + " is forbidden: cannot " + verb);
  }
  kube::KubeClient& inner_;
  mutable std::mutex mu_;
  std::map<std::string, int> counts_;
  std::map<std::string, int> reads_;
  std::string denied_;
};

class ControllerVmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = cluster_.client();
    ASSERT_NE(client_, nullptr);
    prefix_ = ns_.name();
    // Scoped to the test's namespace: tests run in parallel on one cluster, each with a
    // controller of its own, and two controllers on one VM would overwrite each other.
    counting_ = std::make_unique<CountingClient>(*client_);
    idleDeployedController();
    manager_ = std::make_unique<Manager>(
        *counting_, ManagerOptions{.workers = 2, .ns = ns_.name(), .event_instance = "test"});
    thread_ = std::thread([this] { manager_->run(stop_); });
    ASSERT_TRUE(LocalCluster::eventually([&] { return manager_->synced(); }));
  }

  // A new controller process, as after a crash: it knows only what it lists again.
  void restartController() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    stop_ = false;
    manager_ = std::make_unique<Manager>(
        *counting_, ManagerOptions{.workers = 2, .ns = ns_.name(), .event_instance = "test"});
    thread_ = std::thread([this] { manager_->run(stop_); });
    ASSERT_TRUE(LocalCluster::eventually([&] { return manager_->synced(); }));
  }

  void TearDown() override {
    // Release every finalizer this test's objects hold so the namespace can go.
    for (const auto* type : {&kLibvirtMachine, &kProxmoxMachine}) releaseAll(*type);
    releaseAll(resources::kVirtualMachine);
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    cluster_.kubectl("delete vmclass,vmimage,providerclass -l banlieue-test=" + prefix_ +
                     " --wait=false");
    restoreDeployedController();
  }

  // The cluster's deployed controller is idled for the test (deployed_controller.h).
  void idleDeployedController() { ASSERT_TRUE(deployed_controller_.idle()); }
  void restoreDeployedController() { deployed_controller_.restore(); }

  // Enqueues the VM a few times and waits until those reconciles have all run: one started
  // after the enqueues, and nothing is queued or in flight any more (a key enqueued while in
  // flight is queued again when it is done). The positive signal instead of a quiet period.
  void reconcileAndWait(const std::string& name) {
    auto& controller = manager_->controller();
    const uint64_t before = controller.stats().reconciles;
    for (int i = 0; i < 5; ++i) controller.enqueue(ns_.name() + "/" + name);
    ASSERT_TRUE(LocalCluster::eventually([&] {
      if (controller.stats().reconciles <= before) return false;
      auto queue = controller.queue().stats();
      return queue.depth == 0 && queue.processing == 0;
    })) << "the reconciles of "
        << name << " did not finish";
  }

  void releaseAll(const kube::ResourceType& type) {
    auto list = client_->list(type, ns_.name());
    if (!list.ok()) return;
    for (const auto& item : (*list)["items"].GetArray()) {
      (void)client_->patch(type, ns_.name(), json::stringOr(&item, "metadata.name"),
                           kube::PatchType::kMerge, R"({"metadata":{"finalizers":null}})", "");
    }
  }

  void apply(const std::string& yaml) {
    auto result = cluster_.apply(yaml, "-n " + ns_.name());
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }

  void patchStatus(const kube::ResourceType& type, const std::string& ns, const std::string& name,
                   const std::string& status_json) {
    auto patched = client_->patch(type, ns, name, kube::PatchType::kMerge,
                                  R"({"status":)" + status_json + "}", "status");
    ASSERT_TRUE(patched.ok()) << patched.status().message();
  }

  // A ProviderClass whose plugin declares `kind`, as the operator would publish it.
  // `machine_finalizer`, when given, is published as a provider pod of the class would
  // (status.plugin.machineFinalizer, docs/adr/0056).
  void providerClass(const std::string& name, const std::string& kind,
                     const std::string& machine_finalizer = "") {
    apply("apiVersion: banlieue.io/v1alpha1\nkind: ProviderClass\nmetadata:\n  name: " + name +
          "\n  labels: {banlieue-test: " + prefix_ +
          "}\nspec:\n  backend: test\n  deployment: External\n");
    std::string plugin;
    if (!machine_finalizer.empty()) {
      plugin = R"(,"plugin":{"name":"test","machineFinalizer":")" + machine_finalizer + R"("})";
    }
    patchStatus(resources::kProviderClass, "", name,
                R"({"machineKind":{"apiVersion":"infrastructure.banlieue.io/v1beta2","kind":")" +
                    kind + R"("})" + plugin + "}");
  }

  void provider(const std::string& name, const std::string& provider_class,
                const std::string& labels, const std::string& fd_raw = "{}") {
    apply("apiVersion: banlieue.io/v1alpha1\nkind: Provider\nmetadata:\n  name: " + name +
          "\n  labels: " + labels + "\nspec:\n  providerClassRef: {name: " + provider_class +
          "}\n  connection: {endpoint: 'test://" + name + "'}\n");
    patchStatus(
        resources::kProvider, ns_.name(), name,
        R"({"failureDomains":[{"name":"fd-)" + name +
            R"(","labels":{"zone":"z1"},"attributes":{"availableStorageClasses":["fast"],"availableNetworkClasses":["lan"],"raw":)" +
            fd_raw + "}}]}");
  }

  void vmClass(const std::string& name) {
    apply("apiVersion: banlieue.io/v1alpha1\nkind: VMClass\nmetadata:\n  name: " + name +
          "\n  labels: {banlieue-test: " + prefix_ +
          "}\nspec:\n  hardware:\n    cpus: 2\n    memoryMiB: 1024\n    disks: [{name: root, "
          "sizeGiB: 10, storageClass: fast}]\n  network:\n    interfaces: [{name: eth0, "
          "networkClass: lan}]\n");
  }

  // An image ready on each of `providers` ("name=resolvedRef").
  void image(const std::string& name,
             const std::vector<std::pair<std::string, std::string>>& rows) {
    apply("apiVersion: banlieue.io/v1alpha1\nkind: VMImage\nmetadata:\n  name: " + name +
          "\n  labels: {banlieue-test: " + prefix_ +
          "}\nspec:\n  sources: [{providerClass: any, kind: Template, ref: x}]\n");
    std::string list;
    for (const auto& [provider_name, ref] : rows) {
      list += std::string(list.empty() ? "" : ",") + R"({"providerName":")" + provider_name +
              R"(","providerNamespace":")" + ns_.name() + R"(","ready":true,"resolvedRef":")" +
              ref + R"("})";
    }
    patchStatus(resources::kVMImage, "", name, R"({"perProvider":[)" + list + "]}");
  }

  // A VirtualMachine of the test's class and image, optionally placed by Provider labels
  // ("site: one" -> providerSelector matchLabels {site: one}).
  void virtualMachine(const std::string& name, const std::string& match_labels = "") {
    apply("apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  name: " + name +
          "\nspec:\n  classRef: {name: " + prefix_ + "-small}\n  imageRef: {name: " + prefix_ +
          "-img}\n" +
          (match_labels.empty()
               ? ""
               : "  placement: {providerSelector: {matchLabels: {" + match_labels + "}}}\n"));
  }

  // Moves VM `name` to the Providers labelled site=`site`.
  testing::CommandResult placeOn(const std::string& name, const std::string& site) {
    return cluster_.kubectl("patch bvm " + name + " -n " + ns_.name() +
                            " --type merge -p '{\"spec\":{\"placement\":{\"providerSelector\":{"
                            "\"matchLabels\":{\"site\":\"" +
                            site + "\"}}}}}'");
  }

  // Waits for the VM's LibvirtMachine, plays its provider, and waits for the VM to be Ready.
  void provisionLibvirt(const std::string& name) {
    ASSERT_TRUE(LocalCluster::eventually([&] { return get(kLibvirtMachine, name) != nullptr; }));
    provide(kLibvirtMachine, name);
    ASSERT_TRUE(LocalCluster::eventually([&] { return condition(name, "Ready") == "True"; }));
  }

  runtime::Object get(const kube::ResourceType& type, const std::string& name) {
    auto object = client_->get(type, ns_.name(), name);
    if (!object.ok()) return nullptr;
    return std::make_shared<const rapidjson::Document>(std::move(object).value());
  }

  std::string condition(const std::string& vm, const std::string& type,
                        const std::string& field = "status") {
    auto object = get(resources::kVirtualMachine, vm);
    if (!object) return "<absent>";
    const auto* list = json::find(object.get(), "status.conditions");
    if (list == nullptr) return "<none>";
    for (const auto& c : list->GetArray())
      if (json::stringOr(&c, "type") == type) return json::stringOr(&c, field.c_str());
    return "<none>";
  }

  // The provider runtime's part: its finalizer, then a Ready status.
  void provide(const kube::ResourceType& type, const std::string& name) {
    auto finalized =
        client_->patch(type, ns_.name(), name, kube::PatchType::kMerge,
                       R"({"metadata":{"finalizers":["banlieue.io/provider-test"]}})", "");
    ASSERT_TRUE(finalized.ok()) << finalized.status().message();
    provideStatus(type, name);
  }

  // The provider's status alone: for an object created with its finalizer (docs/adr/0056).
  void provideStatus(const kube::ResourceType& type, const std::string& name) {
    patchStatus(type, ns_.name(), name,
                R"({"initialization":{"provisioned":true},"observedPowerState":"PoweredOn",
                    "addresses":[{"type":"InternalIP","address":"192.0.2.10"}],
                    "conditions":[{"type":"Ready","status":"True","reason":"Running",
                                   "message":"running","lastTransitionTime":"2026-01-01T00:00:00Z"}]})");
  }

  void releaseProviderFinalizer(const kube::ResourceType& type, const std::string& name) {
    auto released = client_->patch(type, ns_.name(), name, kube::PatchType::kMerge,
                                   R"({"metadata":{"finalizers":null}})", "");
    ASSERT_TRUE(released.ok() || kube::isNotFound(released.status()))
        << released.status().message();
  }

  bool terminating(const kube::ResourceType& type, const std::string& name) {
    auto object = get(type, name);
    return object && !json::stringOr(object.get(), "metadata.deletionTimestamp").empty();
  }

  LocalCluster& cluster_ = LocalCluster::shared();
  LocalCluster::TestNamespace ns_{cluster_};
  std::string prefix_;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<CountingClient> counting_;
  std::unique_ptr<Manager> manager_;
  testing::DeployedController deployed_controller_{cluster_};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace banlieue::controller
