// What a kubectl user sees, against the real apiserver and the real controller
// (controller_vm_fixture.h): `kubectl get bvm` (kubectl 1.32) shows why a VM is or is not Ready,
// its address, Provider and failure domain; a VM naming two userData sources is refused at
// apply; `kubectl scale bvmpool` drives a pool through its scale subresource; NoProviderMatched
// says where it looked; every condition the controller writes is accepted as a metav1.Condition;
// `kubectl get bvmclass` says which Providers can serve a class, and what they lack when none can.
#include "tests/integration/controller_vm_fixture.h"

#include <gmock/gmock.h>

#include <regex>

namespace banlieue::controller {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

TEST_F(ControllerVmTest, GetBvmShowsReasonAddressProviderAndFailureDomain) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/images/debian.qcow2"}});
  virtualMachine("waiting", "site: nowhere");
  virtualMachine("web", "site: one");
  provisionLibvirt("web");
  ASSERT_TRUE(LocalCluster::eventually([&] { return condition("waiting", "Ready") == "False"; }));

  auto table = cluster_.kubectl("get bvm -n " + ns_.name());
  ASSERT_EQ(table.exit_code, 0) << table.output;
  for (const char* header : {"PROVIDER", "FAILURE-DOMAIN", "READY", "REASON", "IP"}) {
    EXPECT_THAT(table.output, HasSubstr(header)) << table.output;
  }
  // NAME CLASS IMAGE PROVIDER FAILURE-DOMAIN POWER READY REASON IP AGE
  EXPECT_TRUE(std::regex_search(table.output,
                                std::regex("web +\\S+-small +\\S+-img +p1 +fd-p1 +PoweredOn +True +"
                                           "Reconciled +192\\.0\\.2\\.10 ")))
      << table.output;
  EXPECT_TRUE(std::regex_search(table.output, std::regex("waiting .* False +Scheduling ")))
      << table.output;
}

TEST_F(ControllerVmTest, TwoUserDataSourcesAreRefusedAtApply) {
  auto refused = cluster_.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata: {name: two}\nspec:\n"
      "  classRef: {name: c}\n  imageRef: {name: i}\n  userData:\n"
      "    secretRef: {name: s}\n    configMapRef: {name: m}\n",
      "--server-side --validate=false -n " + ns_.name());
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("spec.userData")) << refused.output;
  auto none = cluster_.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata: {name: none}\nspec:\n"
      "  classRef: {name: c}\n  imageRef: {name: i}\n  userData: {}\n",
      "--server-side --validate=false -n " + ns_.name());
  EXPECT_NE(none.exit_code, 0) << none.output;
  for (const char* one : {"secretRef: {name: s}", "configMapRef: {name: m}"}) {
    auto accepted = cluster_.apply(
        std::string("apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata: {name: "
                    "one}\nspec:\n  classRef: {name: c}\n  imageRef: {name: i}\n  userData: {") +
            one + "}\n",
        "--server-side --force-conflicts -n " + ns_.name());
    EXPECT_EQ(accepted.exit_code, 0) << one << ": " << accepted.output;
    cluster_.kubectl("delete bvm one --wait=false -n " + ns_.name());
  }
}

TEST_F(ControllerVmTest, KubectlScaleSetsWarmReplicasAndReadsUnclaimedMembers) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}});
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachinePool\nmetadata:\n  name: web\n"
      "spec:\n  warmReplicas: 2\n  readiness: InfrastructureReady\n  template:\n"
      "    spec:\n      classRef: {name: " +
      prefix_ + "-small}\n      imageRef: {name: " + prefix_ + "-img}\n");
  auto members = [&] {
    size_t live = 0;
    auto list = client_->list(kLibvirtMachine, ns_.name());
    if (!list.ok()) return live;
    for (const auto& item : (*list)["items"].GetArray()) {
      std::string name = json::stringOr(&item, "metadata.name");
      if (!json::stringOr(&item, "metadata.deletionTimestamp").empty()) {
        releaseProviderFinalizer(kLibvirtMachine, name);
        continue;
      }
      ++live;
      if (json::find(&item, "status.conditions") == nullptr) provide(kLibvirtMachine, name);
    }
    return live;
  };
  auto scale = [&](const std::string& path) {
    auto r = cluster_.kubectl("get --raw /apis/banlieue.io/v1alpha1/namespaces/" + ns_.name() +
                              "/virtualmachinepools/web/scale");
    if (r.exit_code != 0) return std::string("<") + r.output + ">";
    auto doc = json::parse(r.output, "scale");
    const auto* v = json::find(&doc, path);
    if (v == nullptr) return std::string("<absent>");
    return v->IsString() ? std::string(v->GetString()) : json::serialize(*v);
  };
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return members() == 2 && scale("status.replicas") == "2"; }, 90s))
      << "members: " << members() << ", scale status.replicas: " << scale("status.replicas");
  EXPECT_EQ(scale("spec.replicas"), "2");
  EXPECT_EQ(scale("status.selector"), "banlieue.io/pool=web,!banlieue.io/claim");

  auto scaled = cluster_.kubectl("scale bvmpool web --replicas=1 -n " + ns_.name());
  ASSERT_EQ(scaled.exit_code, 0) << scaled.output;
  auto pool = client_->get(resources::kVirtualMachinePool, ns_.name(), "web");
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(json::integer(&*pool, "spec.warmReplicas").value_or(-1), 1);
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return members() == 1 && scale("status.replicas") == "1"; }, 60s))
      << "members: " << members() << ", scale status.replicas: " << scale("status.replicas");
}

TEST_F(ControllerVmTest, NoProviderMatchedSaysWhereItLookedAndForWhat) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  provider("p2", prefix_ + "-lv", "{site: two}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}});
  virtualMachine("lost", "site: nowhere");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return condition("lost", "Scheduled", "reason") == "NoProviderMatched"; }));
  EXPECT_EQ(condition("lost", "Scheduled", "message"),
            "no Provider in namespace " + ns_.name() +
                " matches providerSelector site=nowhere: the namespace holds 2 Providers, none "
                "with those labels");
}

TEST_F(ControllerVmTest, GetBvmclassShowsWhichProvidersCanServeTheClass) {
  // The class status reconciler runs cluster-wide in the controller; here it watches this
  // test's class and this namespace's Providers only (tests share the cluster).
  runtime::Informer classes(*client_, resources::kVMClass,
                            runtime::InformerOptions{.label_selector = "banlieue-test=" + prefix_});
  runtime::Informer providers(*client_, resources::kProvider,
                              runtime::InformerOptions{.ns = ns_.name()});
  ClassStatusReconciler reconciler(*client_, classes, providers);
  runtime::Controller controller("vmclass", reconciler, {.workers = 1});
  controller.watch(classes, runtime::Controller::Updates::kIgnoreStatusOnly);
  controller.watchMapped(providers, [&](const runtime::Object&) {
    std::vector<std::string> keys;
    for (const auto& c : classes.list()) keys.push_back(json::stringOr(c.get(), "metadata.name"));
    return keys;
  });
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.emplace_back([&] { classes.run(stop); });
  threads.emplace_back([&] { providers.run(stop); });
  threads.emplace_back([&] { controller.run(stop); });
  ASSERT_TRUE(
      LocalCluster::eventually([&] { return classes.hasSynced() && providers.hasSynced(); }));
  struct Join {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~Join() {
      stop = true;
      for (auto& t : threads) t.join();
    }
  } join{stop, threads};

  const std::string name = prefix_ + "-small";
  vmClass(name);
  auto classCondition = [&](const char* field) {
    auto object = client_->get(resources::kVMClass, "", name);
    if (!object.ok()) return std::string("<absent>");
    const auto* list = json::find(&*object, "status.conditions");
    if (list == nullptr) return std::string("<none>");
    for (const auto& c : list->GetArray())
      if (json::stringOr(&c, "type") == "Ready") return json::stringOr(&c, field);
    return std::string("<none>");
  };
  ASSERT_TRUE(LocalCluster::eventually([&] { return classCondition("reason") == "NoProviders"; }))
      << classCondition("reason");

  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  provider("p2", prefix_ + "-lv", "{site: two}");
  // p2's failure domain lacks the class's network class.
  patchStatus(resources::kProvider, ns_.name(), "p2",
              R"({"failureDomains":[{"name":"fd-p2","attributes":{"availableStorageClasses":)"
              R"(["fast"],"availableNetworkClasses":["dmz"]}}]})");
  const std::string served =
      "served by 1 of 2 Provider(s): " + ns_.name() + "/p1 (1 failure domain)";
  ASSERT_TRUE(LocalCluster::eventually([&] { return classCondition("message") == served; }, 90s))
      << classCondition("reason") << ": " << classCondition("message");
  EXPECT_EQ(classCondition("reason"), "ProvidersAvailable");
  auto table = cluster_.kubectl("get bvmclass " + name);
  ASSERT_EQ(table.exit_code, 0) << table.output;
  // NAME CPUS MEMORYMIB FIRMWARE PROVIDERS READY REASON AGE
  EXPECT_TRUE(std::regex_search(table.output,
                                std::regex(name + " +2 +1024 +efi +1 +True +ProvidersAvailable ")))
      << table.output;
  auto object = client_->get(resources::kVMClass, "", name);
  ASSERT_TRUE(object.ok());
  const auto* listed = json::find(&*object, "status.providers");
  ASSERT_TRUE(listed != nullptr && listed->IsArray() && listed->Size() == 1)
      << json::serialize(*object);
  EXPECT_EQ(json::stringOr(&(*listed)[0], "providerName"), "p1");
  EXPECT_EQ(json::stringOr(&(*listed)[0], "providerNamespace"), ns_.name());
  EXPECT_EQ(json::serialize((*listed)[0]["failureDomains"]), R"(["fd-p1"])");

  // p1 loses the storage class: nobody can serve the class, and the message says why.
  patchStatus(resources::kProvider, ns_.name(), "p1",
              R"({"failureDomains":[{"name":"fd-p1","attributes":{"availableStorageClasses":)"
              R"(["slow"],"availableNetworkClasses":["lan"]}}]})");
  const std::string none = "none of 2 Provider(s) can serve this class: " + ns_.name() +
                           "/p1: storage class 'fast' not available; " + ns_.name() +
                           "/p2: network class 'lan' not available";
  ASSERT_TRUE(LocalCluster::eventually([&] { return classCondition("message") == none; }, 90s))
      << classCondition("reason") << ": " << classCondition("message");
  EXPECT_EQ(classCondition("reason"), "NoProviderSatisfies");
  table = cluster_.kubectl("get bvmclass " + name);
  EXPECT_TRUE(std::regex_search(
      table.output, std::regex(name + " +2 +1024 +efi +0 +False +NoProviderSatisfies ")))
      << table.output;
}

TEST_F(ControllerVmTest, EveryConditionTheControllerWritesIsACompleteMetav1Condition) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/images/debian.qcow2"}});
  virtualMachine("web", "site: one");
  provisionLibvirt("web");
  // A backend reason outside the pattern cannot reach the infra object either: the CRD refuses it.
  auto bad = client_->patch(
      kLibvirtMachine, ns_.name(), "web", kube::PatchType::kMerge,
      R"({"status":{"conditions":[{"type":"Ready","status":"True","reason":"still running",)"
      R"("message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})",
      "status");
  EXPECT_FALSE(bad.ok());
  auto no_message = client_->patch(
      kLibvirtMachine, ns_.name(), "web", kube::PatchType::kMerge,
      R"({"status":{"conditions":[{"type":"Ready","status":"True","reason":"Running",)"
      R"("lastTransitionTime":"2026-01-01T00:00:00Z"}]}})",
      "status");
  EXPECT_FALSE(no_message.ok());

  auto vm = get(resources::kVirtualMachine, "web");
  ASSERT_NE(vm, nullptr);
  const auto* conditions = json::find(vm.get(), "status.conditions");
  ASSERT_NE(conditions, nullptr);
  std::set<std::string> types;
  for (const auto& c : conditions->GetArray()) {
    std::string type = json::stringOr(&c, "type");
    types.insert(type);
    for (const char* field : {"status", "reason", "message", "lastTransitionTime"}) {
      EXPECT_FALSE(json::stringOr(&c, field).empty()) << type << " has no " << field;
    }
  }
  EXPECT_TRUE(types.count("Ready") && types.count("Scheduled") &&
              types.count("InfrastructureReady"))
      << ::testing::PrintToString(types);
}

}  // namespace
}  // namespace banlieue::controller
