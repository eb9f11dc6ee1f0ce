// The banlieue controller against the real local apiserver. The test plays the provider
// runtime and the operator: it publishes ProviderClass.status.machineKind and
// Provider.status.failureDomains, writes the infra CR's status and holds (then releases) the
// provider's finalizer. Every write the controller makes goes through a counting client, so
// the create path's writes are counted and steady state is checked to write nothing.
#include "host/kube/api_error.h"
#include "host/kube/client.h"
#include "host/roles/controller/manager.h"
#include "host/runtime/object_helpers.h"
#include "tests/support/local_cluster.h"

#include <banlieue/sdk/json.h>

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

namespace banlieue::controller {
namespace {

using testing::LocalCluster;
namespace json = sdk::json;
using namespace std::chrono_literals;

const kube::ResourceType kLibvirtMachine{"infrastructure.banlieue.io", "v1beta2", "libvirtmachines",
                                         true};
const kube::ResourceType kProxmoxMachine{"infrastructure.banlieue.io", "v1beta2", "proxmoxmachines",
                                         true};

// Forwards to a real client and counts writes per "plural/ns/name".
class CountingClient final : public kube::KubeClient {
 public:
  explicit CountingClient(kube::KubeClient& inner) : inner_(inner) {}

  StatusOr<rapidjson::Document> get(const kube::ResourceType& t, const std::string& ns,
                                    const std::string& name, const std::string& sub) override {
    return inner_.get(t, ns, name, sub);
  }
  StatusOr<rapidjson::Document> list(const kube::ResourceType& t, const std::string& ns,
                                     const kube::ListOptions& o) override {
    return inner_.list(t, ns, o);
  }
  StatusOr<rapidjson::Document> create(const kube::ResourceType& t, const std::string& ns,
                                       const std::string& body) override {
    auto doc = json::parse(body, "create");
    count(t, ns, json::stringOr(&doc, "metadata.name"));
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
  kube::KubeClient& inner_;
  mutable std::mutex mu_;
  std::map<std::string, int> counts_;
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

  // Other tests of the shared cluster install banlieue (bootstrap), and the node then runs
  // a real cluster-wide `banlieue controller`. Two controllers on one VM overwrite each other.
  // A leader whose Lease is taken keeps leading until its renew deadline passes, so holding
  // the Lease alone is not enough: its Deployment is scaled to zero for the test (put back in
  // TearDown) and the test goes on once its pods are gone. The Lease, held here for an hour,
  // keeps any controller that starts meanwhile a follower.
  void idleDeployedController() {
    cluster_.kubectl("create namespace banlieue-system");  // AlreadyExists is fine
    std::string now = runtime::rfc3339MicroNow();
    auto taken = cluster_.apply(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: "
        "banlieue-controller\n  namespace: banlieue-system\nspec:\n  holderIdentity: "
        "controller-integration-tests\n  leaseDurationSeconds: 3600\n  acquireTime: '" +
            now + "'\n  renewTime: '" + now + "'\n",
        "--server-side --force-conflicts --field-manager=controller-integration-tests");
    ASSERT_EQ(taken.exit_code, 0) << taken.output;
    auto replicas = cluster_.kubectl(
        "get deployment banlieue-controller -n banlieue-system -o jsonpath='{.spec.replicas}'");
    displaced_replicas_ = replicas.exit_code == 0 ? replicas.output : "";
    if (!displaced_replicas_.empty() && displaced_replicas_ != "0") {
      auto scaled =
          cluster_.kubectl("scale deployment banlieue-controller --replicas=0 -n banlieue-system");
      ASSERT_EQ(scaled.exit_code, 0) << scaled.output;
    }
    ASSERT_TRUE(LocalCluster::eventually(
        [&] {
          auto pods = cluster_.kubectl(
              "get pods -n banlieue-system -o jsonpath='{.items[*].metadata.name}' -l "
              "app.kubernetes.io/name=banlieue,app.kubernetes.io/component=controller");
          return pods.exit_code == 0 && pods.output.empty();
        },
        120s))
        << "the deployed controller's pods did not go";
  }

  void restoreDeployedController() {
    if (displaced_replicas_.empty() || displaced_replicas_ == "0") return;
    cluster_.kubectl("scale deployment banlieue-controller --replicas=" + displaced_replicas_ +
                     " -n banlieue-system");
  }

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
  void providerClass(const std::string& name, const std::string& kind) {
    apply("apiVersion: banlieue.io/v1alpha1\nkind: ProviderClass\nmetadata:\n  name: " + name +
          "\n  labels: {banlieue-test: " + prefix_ +
          "}\nspec:\n  backend: test\n  deployment: External\n");
    patchStatus(resources::kProviderClass, "", name,
                R"({"machineKind":{"apiVersion":"infrastructure.banlieue.io/v1beta2","kind":")" +
                    kind + R"("}})");
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
  std::string displaced_replicas_;  // the deployed controller's replicas before the test
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST_F(ControllerVmTest, CreateBecomesReadyPowerFlowsSteadyStateIsSilentDeleteLeavesNothing) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/images/debian.qcow2"}});
  apply(
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  user-data: "
      "'hostname: ${VM_NAME} ${OTHER}'\n");
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  name: web\n  "
      "labels: {app: web}\nspec:\n  classRef: {name: " +
      prefix_ + "-small}\n  imageRef: {name: " + prefix_ +
      "-img}\n  userData: {configMapRef: {name: seed}}\n");

  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kLibvirtMachine, "web") != nullptr; }))
      << condition("web", "Ready", "message");
  auto machine = get(kLibvirtMachine, "web");
  EXPECT_EQ(json::stringOr(machine.get(), "spec.providerRef.name"), "p1");
  EXPECT_EQ(json::stringOr(machine.get(), "spec.failureDomain"), "fd-p1");
  EXPECT_EQ(json::stringOr(machine.get(), "spec.userData"), "hostname: web ${OTHER}");
  EXPECT_EQ(json::stringOr(machine.get(), "spec.bootSource.volume"), "/images/debian.qcow2");
  const auto* labels = json::find(machine.get(), "metadata.labels");
  ASSERT_NE(labels, nullptr);
  EXPECT_STREQ((*labels)["banlieue.io/provider"].GetString(), "p1");
  EXPECT_STREQ((*labels)["banlieue.io/owned-by"].GetString(), "web");
  EXPECT_STREQ((*labels)["app"].GetString(), "web");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return condition("web", "Scheduled") == "True" &&
           condition("web", "Ready", "reason") == "InfrastructureNotReady";
  })) << condition("web", "Ready", "message");

  provide(kLibvirtMachine, "web");
  ASSERT_TRUE(LocalCluster::eventually([&] { return condition("web", "Ready") == "True"; }))
      << condition("web", "Ready", "message");
  auto vm = get(resources::kVirtualMachine, "web");
  EXPECT_EQ(json::stringOr(vm.get(), "status.scheduled.providerName"), "p1");
  EXPECT_EQ(json::stringOr(vm.get(), "status.infrastructureRef.kind"), "LibvirtMachine");
  EXPECT_EQ(json::stringOr(vm.get(), "status.observedPowerState"), "PoweredOn");
  EXPECT_STREQ((*json::find(vm.get(), "status.addresses"))[0]["address"].GetString(), "192.0.2.10");
  EXPECT_EQ(json::integer(vm.get(), "status.observedGeneration"),
            json::integer(vm.get(), "metadata.generation"));

  // The image's top-level Ready, aggregated from its (one) Provider row.
  EXPECT_TRUE(LocalCluster::eventually([&] {
    auto image = client_->get(resources::kVMImage, "", prefix_ + "-img");
    if (!image.ok()) return false;
    const auto* list = json::find(&*image, "status.conditions");
    return list != nullptr && list->IsArray() && list->Size() == 1 &&
           json::stringOr(&(*list)[0], "status") == "True";
  }));

  int create_writes = counting_->objectWrites(ns_.name(), "web");
  std::cout << "controller writes for one VM from create to Ready: " << create_writes
            << " (events: " << counting_->eventWrites() << "; " << counting_->describe() << ")"
            << std::endl;
  EXPECT_LE(create_writes, 4);

  // Steady state: more reconciles of a converged VM write nothing.
  int before = counting_->total();
  reconcileAndWait("web");
  EXPECT_EQ(counting_->total(), before) << counting_->describe();

  // Power flows to the infra CR.
  ASSERT_EQ(cluster_
                .kubectl("patch vm web -n " + ns_.name() +
                         " --type merge -p '{\"spec\":{\"desiredPowerState\":\"PoweredOff\"}}'")
                .exit_code,
            0);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    auto m = get(kLibvirtMachine, "web");
    return m && json::stringOr(m.get(), "spec.desiredPowerState") == "PoweredOff";
  }));

  // Delete waits for the infra CR (and so the backend VM) to go.
  ASSERT_EQ(cluster_.kubectl("delete vm web --wait=false -n " + ns_.name()).exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "web"); }));
  // A reconcile that reads the terminating infra CR (the delete path reads it live) keeps the VM.
  reconcileAndWait("web");
  EXPECT_NE(get(resources::kVirtualMachine, "web"), nullptr) << "the VM must outlive its infra CR";
  releaseProviderFinalizer(kLibvirtMachine, "web");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return get(resources::kVirtualMachine, "web") == nullptr &&
           get(kLibvirtMachine, "web") == nullptr;
  }));
}

TEST_F(ControllerVmTest, BackendSwapConvergesWithinAKindAndAcrossKinds) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  providerClass(prefix_ + "-px", "ProxmoxMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  provider("p2", prefix_ + "-lv", "{site: two}");
  provider("p3", prefix_ + "-px", "{site: three}", R"({"node":"pve1"})");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}, {"p2", "/img/b"}, {"p3", "9000"}});
  auto place = [&](const std::string& site) {
    return cluster_.kubectl("patch vm db -n " + ns_.name() +
                            " --type merge -p '{\"spec\":{\"placement\":{\"providerSelector\":{"
                            "\"matchLabels\":{\"site\":\"" +
                            site + "\"}}}}}'");
  };
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  name: db\nspec:\n"
      "  classRef: {name: " +
      prefix_ + "-small}\n  imageRef: {name: " + prefix_ +
      "-img}\n  placement: {providerSelector: {matchLabels: {site: one}}}\n");
  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kLibvirtMachine, "db") != nullptr; }));
  provide(kLibvirtMachine, "db");
  ASSERT_TRUE(LocalCluster::eventually([&] { return condition("db", "Ready") == "True"; }));

  // Same kind, other Provider: the old CR goes first (its provider removes the backend VM).
  ASSERT_EQ(place("two").exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "db"); }));
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return condition("db", "PlacementValid", "reason") == "ProviderChanged" &&
           condition("db", "Ready") == "False";
  }));
  releaseProviderFinalizer(kLibvirtMachine, "db");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto m = get(kLibvirtMachine, "db");
    return m && json::stringOr(m.get(), "spec.providerRef.name") == "p2" &&
           json::stringOr(m.get(), "metadata.deletionTimestamp").empty();
  }));
  provide(kLibvirtMachine, "db");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto vm = get(resources::kVirtualMachine, "db");
    return condition("db", "Ready") == "True" && condition("db", "PlacementValid") == "True" &&
           json::stringOr(vm.get(), "status.scheduled.providerName") == "p2";
  })) << condition("db", "Ready", "message");

  // Another kind: the LibvirtMachine goes, a ProxmoxMachine replaces it.
  ASSERT_EQ(place("three").exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "db"); }));
  EXPECT_EQ(get(kProxmoxMachine, "db"), nullptr) << "created before the old one was gone";
  releaseProviderFinalizer(kLibvirtMachine, "db");
  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kProxmoxMachine, "db") != nullptr; }));
  EXPECT_EQ(get(kLibvirtMachine, "db"), nullptr);
  auto proxmox = get(kProxmoxMachine, "db");
  EXPECT_EQ(json::stringOr(proxmox.get(), "spec.node"), "pve1");
  EXPECT_EQ(json::integer(proxmox.get(), "spec.templateVmid"), 9000);
  provide(kProxmoxMachine, "db");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto vm = get(resources::kVirtualMachine, "db");
    return condition("db", "Ready") == "True" &&
           json::stringOr(vm.get(), "status.infrastructureRef.kind") == "ProxmoxMachine" &&
           json::stringOr(vm.get(), "status.scheduled.providerName") == "p3";
  })) << condition("db", "Ready", "message");
}

TEST_F(ControllerVmTest, ManualMigrationWaitsForTheAnnotation) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  provider("p2", prefix_ + "-lv", "{site: two}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}, {"p2", "/img/b"}});
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  name: app\nspec:\n"
      "  classRef: {name: " +
      prefix_ + "-small}\n  imageRef: {name: " + prefix_ +
      "-img}\n  migrationPolicy: manual\n  placement: {providerSelector: {matchLabels: {site: "
      "one}}}\n");
  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kLibvirtMachine, "app") != nullptr; }));
  provide(kLibvirtMachine, "app");
  ASSERT_TRUE(LocalCluster::eventually([&] { return condition("app", "Ready") == "True"; }));

  ASSERT_EQ(cluster_
                .kubectl("patch vm app -n " + ns_.name() +
                         " --type merge -p '{\"spec\":{\"placement\":{\"providerSelector\":{"
                         "\"matchLabels\":{\"site\":\"two\"}}}}}'")
                .exit_code,
            0);
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return condition("app", "PlacementValid", "reason") == "ProviderChanged" &&
           condition("app", "Ready", "reason") == "PlacementInvalid";
  }));
  EXPECT_FALSE(terminating(kLibvirtMachine, "app")) << "manual policy moved without the annotation";

  ASSERT_EQ(cluster_.kubectl("annotate vm app banlieue.io/migrate=true -n " + ns_.name()).exit_code,
            0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "app"); }));
  releaseProviderFinalizer(kLibvirtMachine, "app");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto m = get(kLibvirtMachine, "app");
    return m && json::stringOr(m.get(), "spec.providerRef.name") == "p2";
  }));
}

TEST_F(ControllerVmTest, MissingClassAndUnpublishedKindRecoverWhenTheyAppear) {
  apply("apiVersion: banlieue.io/v1alpha1\nkind: ProviderClass\nmetadata:\n  name: " + prefix_ +
        "-late\n  labels: {banlieue-test: " + prefix_ +
        "}\nspec:\n  backend: test\n  deployment: External\n");
  provider("p1", prefix_ + "-late", "{site: one}");
  image(prefix_ + "-img", {{"p1", "/img/a"}});
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  name: late\nspec:\n"
      "  classRef: {name: " +
      prefix_ + "-small}\n  imageRef: {name: " + prefix_ + "-img}\n");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return condition("late", "Ready", "reason") == "ClassNotFound";
  })) << condition("late", "Ready", "reason");
  EXPECT_EQ(condition("late", "Ready"), "False");
  EXPECT_EQ(condition("late", "Ready", "message"), "VMClass " + prefix_ + "-small not found");

  vmClass(prefix_ + "-small");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return condition("late", "Scheduled", "reason") == "InfraBuildFailed";
  })) << condition("late", "Scheduled", "reason");
  EXPECT_NE(condition("late", "Scheduled", "message").find("has not published status.machineKind"),
            std::string::npos);

  patchStatus(
      resources::kProviderClass, "", prefix_ + "-late",
      R"({"machineKind":{"apiVersion":"infrastructure.banlieue.io/v1beta2","kind":"LibvirtMachine"}})");
  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kLibvirtMachine, "late") != nullptr; }));
  EXPECT_TRUE(LocalCluster::eventually([&] { return condition("late", "Scheduled") == "True"; }));
}

TEST_F(ControllerVmTest, PoolOfSixSpreadsTwoTwoTwoOverThreeFailureDomainsAndScalesDown) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  std::string fds;
  for (const char* zone : {"a", "b", "c"}) {
    fds +=
        std::string(fds.empty() ? "" : ",") + R"({"name":"fd-)" + zone + R"(","labels":{"zone":")" +
        zone +
        R"("},"attributes":{"availableStorageClasses":["fast"],"availableNetworkClasses":["lan"]}})";
  }
  patchStatus(resources::kProvider, ns_.name(), "p1", R"({"failureDomains":[)" + fds + "]}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}});
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachinePool\nmetadata:\n  name: web\n"
      "spec:\n  warmReplicas: 6\n  readiness: InfrastructureReady\n  template:\n"
      "    labels: {app: web}\n    spec:\n      classRef: {name: " +
      prefix_ + "-small}\n      imageRef: {name: " + prefix_ +
      "-img}\n      placement:\n        antiAffinity:\n        - topologyKey: zone\n"
      "          mode: preferred\n          labelSelector: {matchLabels: {banlieue.io/pool: "
      "web}}\n");

  // Play the provider for every member as it appears (maxSurge bounds members in flight).
  auto machines = [&] {
    std::map<std::string, std::string> placed;  // name -> failure domain
    auto list = client_->list(kLibvirtMachine, ns_.name());
    if (!list.ok()) return placed;
    for (const auto& item : (*list)["items"].GetArray()) {
      if (!json::stringOr(&item, "metadata.deletionTimestamp").empty()) continue;
      std::string name = json::stringOr(&item, "metadata.name");
      placed[name] = json::stringOr(&item, "spec.failureDomain");
      if (json::find(&item, "status.conditions") == nullptr) provide(kLibvirtMachine, name);
    }
    return placed;
  };
  auto pool_status = [&](const char* field) {
    auto pool = client_->get(resources::kVirtualMachinePool, ns_.name(), "web");
    // Zero counts are left out of the status.
    return pool.ok() ? json::integer(&*pool, std::string("status.") + field).value_or(0) : -1;
  };
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return machines().size() == 6 && pool_status("available") == 6; }, 90s))
      << "members: " << machines().size() << ", available: " << pool_status("available");
  std::map<std::string, int> per_domain;
  for (const auto& [name, fd] : machines()) ++per_domain[fd];
  EXPECT_EQ(per_domain, (std::map<std::string, int>{{"fd-a", 2}, {"fd-b", 2}, {"fd-c", 2}}));
  EXPECT_EQ(pool_status("replicas"), 6);
  EXPECT_EQ(pool_status("provisioning"), 0);

  ASSERT_EQ(cluster_
                .kubectl("patch vmpool web -n " + ns_.name() +
                         " --type merge -p '{\"spec\":{\"warmReplicas\":3}}'")
                .exit_code,
            0);
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        auto list = client_->list(kLibvirtMachine, ns_.name());
        if (list.ok()) {
          for (const auto& item : (*list)["items"].GetArray()) {
            if (!json::stringOr(&item, "metadata.deletionTimestamp").empty())
              releaseProviderFinalizer(kLibvirtMachine, json::stringOr(&item, "metadata.name"));
          }
        }
        return pool_status("replicas") == 3 && machines().size() == 3;
      },
      60s))
      << "replicas: " << pool_status("replicas");
}

TEST_F(ControllerVmTest, VSphereClusterAggregatesTheSelectedProvidersFailureDomains) {
  providerClass(prefix_ + "-vs", "VSphereMachine");
  provider("vc1", prefix_ + "-vs", "{env: prod}", R"({"datacenter":"dc1","cluster":"c1"})");
  provider("vc2", prefix_ + "-vs", "{env: prod}", R"({"datacenter":"dc1","cluster":"c2"})");
  provider("lab", prefix_ + "-vs", "{env: dev}");
  apply(
      "apiVersion: infrastructure.banlieue.io/v1beta2\nkind: VSphereCluster\nmetadata:\n  name: "
      "prod\nspec:\n  providerSelector: {matchLabels: {env: prod}}\n  controlPlaneEndpoint: "
      "{host: 10.0.0.1, port: 6443}\n");
  const kube::ResourceType vsphere_cluster{"infrastructure.banlieue.io", "v1beta2",
                                           "vsphereclusters", true};
  runtime::Object cluster;
  ASSERT_TRUE(LocalCluster::eventually([&] {
    cluster = get(vsphere_cluster, "prod");
    const auto* fds = cluster ? json::find(cluster.get(), "status.failureDomains") : nullptr;
    return fds != nullptr && fds->IsArray() && fds->Size() == 2;
  }));
  const auto& fds = *json::find(cluster.get(), "status.failureDomains");
  EXPECT_STREQ(fds[0]["name"].GetString(), "fd-vc1");
  EXPECT_STREQ(fds[1]["name"].GetString(), "fd-vc2");
  EXPECT_STREQ(fds[1]["attributes"]["cluster"].GetString(), "c2");
  EXPECT_TRUE(json::boolean(cluster.get(), "status.initialization.provisioned"));
  EXPECT_EQ(json::integer(cluster.get(), "status.controlPlaneEndpoint.port"), 6443);

  // A Provider leaving the selection takes its failure domain with it.
  ASSERT_EQ(cluster_.kubectl("label provider vc2 env=dev --overwrite -n " + ns_.name()).exit_code,
            0);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    auto c = get(vsphere_cluster, "prod");
    const auto* list = c ? json::find(c.get(), "status.failureDomains") : nullptr;
    return list != nullptr && list->Size() == 1;
  }));
}

}  // namespace
}  // namespace banlieue::controller
