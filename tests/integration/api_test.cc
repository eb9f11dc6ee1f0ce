// The banlieue API against the real local apiserver: the generated CRDs install and validate,
// every example applies, kubectl shows the printer columns, and `banlieue bootstrap operator`
// is idempotent, equal to its --dry-run output, and installs least-privilege RBAC.
#include "host/api/kinds.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace banlieue {
namespace {

using testing::CommandResult;
using testing::LocalCluster;
using testing::runCommand;
using testing::shellQuote;
namespace fs = std::filesystem;
namespace json = sdk::json;

const fs::path kSource = BANLIEUE_SOURCE_DIR;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(ApiIntegrationTest, GeneratedCrdsAreEstablishedAndStructural) {
  auto& cluster = LocalCluster::shared();
  for (const auto& kind : api::builtinKinds()) {
    auto r = cluster.kubectl("get crd " + kind.crdName() +
                             " -o jsonpath='{range .status.conditions[*]}{.type}={.status};{end}'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "Established=True")) << kind.kind << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "NonStructuralSchema")) << kind.kind << ": " << r.output;
  }
}

TEST(ApiIntegrationTest, ExamplesApplyAndPrinterColumnsShow) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  std::vector<fs::path> examples;
  for (const auto& entry : fs::directory_iterator(kSource / "examples")) {
    if (entry.path().extension() == ".yaml") examples.push_back(entry.path());
  }
  std::sort(examples.begin(), examples.end());
  ASSERT_GE(examples.size(), 9u);
  for (const auto& file : examples) {
    auto r =
        cluster.kubectl("apply --server-side -n " + ns.name() + " -f " + shellQuote(file.string()));
    EXPECT_EQ(r.exit_code, 0) << file.filename() << ":\n" << r.output;
  }
  auto pc = cluster.apply(R"(apiVersion: banlieue.io/v1alpha1
kind: ProviderClass
metadata: {name: api-test-libvirt}
spec:
  backend: libvirt
  plugin: {path: libvirt}
  image: {repository: localhost/banlieue, tag: "1.2.3"}
)",
                          "--server-side");
  ASSERT_EQ(pc.exit_code, 0) << pc.output;

  auto table = cluster.kubectl("get bvm,bvmclass,bvmimage,prov,provclass -n " + ns.name());
  ASSERT_EQ(table.exit_code, 0) << table.output;
  for (const char* header :
       {"CLASS", "IMAGE", "PROVIDER", "POWER", "READY", "CPUS", "MEMORYMIB", "FIRMWARE", "OS",
        "VERSION", "ARCH", "BACKEND", "DEPLOYMENT", "PROVIDERS"}) {
    EXPECT_TRUE(contains(table.output, header)) << header << " missing from:\n" << table.output;
  }
  EXPECT_TRUE(std::regex_search(table.output, std::regex("db-prod-large +8 +32768 +efi-secure")))
      << table.output;
  EXPECT_TRUE(std::regex_search(table.output, std::regex("ubuntu-22-04 +ubuntu +22\\.04 +amd64")))
      << table.output;
  EXPECT_TRUE(std::regex_search(table.output, std::regex("web-01 +small +ubuntu-22-04")))
      << table.output;
  EXPECT_TRUE(
      std::regex_search(table.output, std::regex("api-test-libvirt +libvirt +1\\.2\\.3 +Managed")))
      << table.output;
  // The category lists every banlieue kind at once.
  auto category = cluster.kubectl("get banlieue -n " + ns.name());
  EXPECT_EQ(category.exit_code, 0) << category.output;
  EXPECT_TRUE(contains(category.output, "virtualmachinepool.banlieue.io/sandboxes"))
      << category.output;

  cluster.kubectl("delete vmclass db-prod-large small --ignore-not-found");
  cluster.kubectl("delete vmimage ubuntu-22-04 --ignore-not-found");
  cluster.kubectl("delete providerclass api-test-libvirt --ignore-not-found --wait=false");
}

struct Invalid {
  const char* what;
  const char* manifest;
  const char* field;  // the apiserver's message must name it
};

TEST(ApiIntegrationTest, InvalidObjectsAreRefusedNamingTheField) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  const Invalid cases[] = {
      {"missing classRef",
       "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata: {name: bad}\n"
       "spec: {imageRef: {name: i}}\n",
       "spec.classRef: Required value"},
      {"cpus 0",
       "apiVersion: banlieue.io/v1alpha1\nkind: VMClass\nmetadata: {name: api-test-bad}\n"
       "spec: {hardware: {cpus: 0, memoryMiB: 1024, disks: [{name: r, sizeGiB: 1, "
       "storageClass: g}]}}\n",
       "spec.hardware.cpus"},
      {"bad enum",
       "apiVersion: banlieue.io/v1alpha1\nkind: VMClass\nmetadata: {name: api-test-bad}\n"
       "spec: {firmware: uefi, hardware: {cpus: 1, memoryMiB: 1024, disks: [{name: r, "
       "sizeGiB: 1, storageClass: g}]}}\n",
       "spec.firmware: Unsupported value: \"uefi\""},
      {"unknown power state",
       "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata: {name: bad}\n"
       "spec: {classRef: {name: c}, imageRef: {name: i}, desiredPowerState: Running}\n",
       "spec.desiredPowerState: Unsupported value: \"Running\""},
      {"malformed selector operator",
       "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata: {name: bad}\n"
       "spec: {classRef: {name: c}, imageRef: {name: i}, placement: {providerSelector: "
       "{matchExpressions: [{key: env, operator: Equals, values: [prod]}]}}}\n",
       "spec.placement.providerSelector.matchExpressions.operator: Unsupported value"},
  };
  for (const auto& c : cases) {
    // --validate=false: the apiserver, not kubectl's client-side check, must refuse it.
    auto r = cluster.apply(c.manifest, "--server-side --validate=false -n " + ns.name());
    EXPECT_NE(r.exit_code, 0) << c.what << " was accepted";
    EXPECT_TRUE(contains(r.output, c.field)) << c.what << ": " << r.output;
  }
}

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plugins_ = fs::temp_directory_path() / ("banlieue-api-plugins-" + std::to_string(::getpid()));
    fs::remove_all(plugins_);
    write("libvirt/provider.json",
          R"({"manifestVersion":1,"name":"libvirt","library":"lib.so","abi":{"major":1},)"
          R"("providerVersion":"1","infrastructure":[{"group":"infrastructure.banlieue.io",)"
          R"("version":"v1beta2","kind":"LibvirtMachine"}]})");
    write("acme/provider.json",
          R"({"manifestVersion":1,"name":"acme","library":"lib.so","abi":{"major":1},)"
          R"("providerVersion":"1","infrastructure":[{"group":"infrastructure.acme.example",)"
          R"("version":"v1","kind":"AcmeMachine"}],"crds":["crds/acme.yaml"]})");
    write("acme/crds/acme.yaml",
          "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
          "metadata: {name: acmemachines.infrastructure.acme.example}\n"
          "spec:\n  group: infrastructure.acme.example\n"
          "  names: {kind: AcmeMachine, plural: acmemachines, singular: acmemachine, "
          "listKind: AcmeMachineList}\n  scope: Namespaced\n"
          "  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: "
          "{type: object, x-kubernetes-preserve-unknown-fields: true}}}]\n");
  }
  void TearDown() override {
    fs::remove_all(plugins_);
    // The bootstrapped controller, operator and imagebuilder run for real on the node:
    // leave none running cluster-wide for the tests that come after.
    LocalCluster::shared().kubectl(
        "delete deployment banlieue-controller banlieue-operator banlieue-imagebuilder "
        "-n banlieue-system --ignore-not-found --wait=true",
        std::chrono::seconds(90));
  }

  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((plugins_ / rel).parent_path());
    std::ofstream(plugins_ / rel) << text;
    for (auto p = plugins_ / rel; p != plugins_.parent_path(); p = p.parent_path()) {
      ::chmod(p.c_str(), fs::is_directory(p) ? 0755 : 0644);
    }
  }

  std::string bootstrapArgs(const std::string& userdata_ns) const {
    return std::string(BANLIEUE_BINARY) + " bootstrap operator --plugin-dir " +
           shellQuote(plugins_.string()) + " --userdata-namespace " + userdata_ns +
           " --no-wait";  // the rollout is bootstrap_ux_test's
  }

  CommandResult bootstrap(const std::string& userdata_ns) const {
    return runCommand(bootstrapArgs(userdata_ns) + " --kubeconfig " +
                          shellQuote(LocalCluster::shared().kubeconfig().string()),
                      std::chrono::seconds(120));
  }

  fs::path plugins_;
};

// kind/name -> resourceVersion for everything bootstrap owns that no controller writes, plus
// generation and bootstrap's managed-fields stamp for Deployments (whose status others write).
std::map<std::string, std::string> snapshot(const LocalCluster& cluster,
                                            const std::vector<std::string>& refs) {
  std::map<std::string, std::string> out;
  for (const auto& ref : refs) {
    auto r = cluster.kubectl("get " + ref + " -o json --show-managed-fields");
    if (r.exit_code != 0) {
      ADD_FAILURE() << ref << ": " << r.output;
      continue;
    }
    auto doc = json::parse(r.output, ref);
    const auto& meta = doc["metadata"];
    std::string stamp =
        std::to_string(meta.HasMember("generation") ? meta["generation"].GetInt64() : 0);
    const auto* managed = json::member(&meta, "managedFields");
    if (managed == nullptr || !managed->IsArray()) {
      ADD_FAILURE() << ref << " has no managedFields";
      continue;
    }
    for (const auto& entry : managed->GetArray()) {
      if (json::stringOr(&entry, "manager") == "banlieue.io/bootstrap") {
        stamp += " " + json::stringOr(&entry, "time") + " " + json::serialize(entry["fieldsV1"]);
      }
    }
    // The operator this test bootstraps writes every ProviderClass's status once it runs,
    // which may fall between the two snapshots; the controller-manager fills the aggregated
    // ClusterRoles' rules (docs/adr/0043).
    bool others_write_status =
        ref.rfind("deployment", 0) == 0 || ref.rfind("serviceaccount", 0) == 0 ||
        ref.rfind("crd", 0) == 0 || ref.rfind("providerclass", 0) == 0 ||
        ref == "clusterrole/banlieue-controller" || ref == "clusterrole/banlieue-operator";
    if (!others_write_status) stamp += " rv=" + json::stringOr(&meta, "resourceVersion");
    out[ref] = stamp;
  }
  return out;
}

TEST_F(BootstrapTest, DryRunAndApplyGiveTheSameStateAndRerunsChangeNothing) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  fs::path rendered =
      plugins_.parent_path() / ("banlieue-api-dry-run-" + std::to_string(::getpid()) + ".yaml");
  auto dry = runCommand(bootstrapArgs(ns.name()) + " --dry-run > " + shellQuote(rendered.string()));
  ASSERT_EQ(dry.exit_code, 0) << dry.output;
  auto kubectl_apply = cluster.kubectl(
      "apply --server-side --force-conflicts --field-manager=banlieue.io/bootstrap -f " +
      shellQuote(rendered.string()));
  ASSERT_EQ(kubectl_apply.exit_code, 0) << kubectl_apply.output;

  // Let the controllers that write to these objects settle: tokens on the ServiceAccounts,
  // observedGeneration on the Deployments.
  const std::string sys = "-n banlieue-system ";
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        auto r = cluster.kubectl("get deploy banlieue-controller banlieue-operator " + sys +
                                 "-o jsonpath='{range .items[*]}{.metadata.generation}="
                                 "{.status.observedGeneration};{end}'");
        return r.exit_code == 0 && r.output == "1=1;1=1;";
      },
      std::chrono::seconds(60)));
  // And the operator's first pass over the ProviderClass: its finalizer and its status
  // (docs/adr/0024), writes of its own that a rerun must not count as bootstrap's.
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        auto r = cluster.kubectl(
            "get providerclass acme -o jsonpath='{.metadata.finalizers} "
            "{.metadata.generation} {.status.observedGeneration}'");
        std::istringstream fields(r.output);
        std::string finalizers, generation, observed;
        fields >> finalizers >> generation >> observed;
        return r.exit_code == 0 && finalizers == "[\"banlieue.io/providerclass-in-use\"]" &&
               !generation.empty() && generation == observed;
      },
      std::chrono::seconds(60)))
      << cluster.kubectl("get providerclass acme -o yaml").output;

  // The same objects, applied by bootstrap itself: nothing to change.
  auto first = bootstrap(ns.name());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_TRUE(contains(first.output, " 0 changed")) << first.output;

  const std::vector<std::string> refs = {
      "namespace/banlieue-system",
      "crd/virtualmachines.banlieue.io",
      "crd/acmemachines.infrastructure.acme.example",
      "serviceaccount/banlieue-controller " + sys,
      "serviceaccount/banlieue-operator " + sys,
      "clusterrole/banlieue-controller",
      "clusterrole/banlieue-operator",
      "clusterrole/banlieue-provider-libvirt",
      "clusterrole/banlieue-provider-acme",
      "clusterrole/banlieue-infrastructure-acme",
      "clusterrole/banlieue-provider",
      "clusterrole/banlieue-operator-base",
      "clusterrolebinding/banlieue-controller",
      "clusterrolebinding/banlieue-operator",
      "role/banlieue-controller-leader-election " + sys,
      "rolebinding/banlieue-operator-leader-election " + sys,
      "rolebinding/banlieue-controller-userdata -n " + ns.name(),
      "deployment/banlieue-controller " + sys,
      "deployment/banlieue-operator " + sys,
      "providerclass/libvirt",
      "providerclass/acme",
  };
  auto before = snapshot(cluster, refs);
  auto second = bootstrap(ns.name());
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_TRUE(contains(second.output, " 0 changed")) << second.output;
  auto again = cluster.kubectl(
      "apply --server-side --force-conflicts --field-manager=banlieue.io/bootstrap -f " +
      shellQuote(rendered.string()));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(snapshot(cluster, refs), before);

  auto pc = cluster.kubectl("get providerclass libvirt -o jsonpath='{.spec.plugin.path}'");
  EXPECT_EQ(pc.output, "/usr/lib/banlieue/plugins/libvirt");
  fs::remove(rendered);
}

// A status list a writer empties again by server-side apply (a Provider's image row going back
// to BuildPending: its zones) is accepted. The local control plane's kube-apiserver (1.20)
// stores such a list as null, which a non-nullable array schema refuses.
TEST(ApiIntegrationTest, AStatusListEmptiedByServerSideApplyIsAccepted) {
  auto& cluster = LocalCluster::shared();
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);
  const kube::ResourceType images{"banlieue.io", "v1alpha1", "vmimages", false};
  const std::string name = "api-test-emptied-" + std::to_string(::getpid());
  auto created = cluster.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VMImage\nmetadata: {name: " + name +
      "}\nspec: {sources: [{providerClass: x, kind: Url, ref: unused, importFrom: q/x:1}]}\n");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  auto row = [&](const std::string& zones) {
    return client->apply(
        images, "", name,
        R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{"name":")" + name +
            R"("},"status":{"perProvider":[{"providerName":"p","providerNamespace":"n",)"
            R"("ready":false,"reason":"BuildPending","zones":)" +
            zones + "}]}}",
        {.field_manager = "banlieue.io/provider-x/n/p", .subresource = "status"});
  };
  auto first = row(R"([{"name":"a","ready":false}])");
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto emptied = row("[]");
  EXPECT_TRUE(emptied.ok()) << emptied.status().message();
  // Another writer's apply of the same object still validates.
  auto condition = client->apply(
      images, "", name,
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{"name":")" + name +
          R"("},"status":{"conditions":[{"type":"Ready","status":"False","reason":"Waiting",)"
          R"("message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})",
      {.field_manager = "banlieue.io/controller", .subresource = "status"});
  EXPECT_TRUE(condition.ok()) << condition.status().message();
  cluster.kubectl("delete vmimage " + name + " --ignore-not-found");
}

struct Access {
  bool controller;
  bool operator_;
};

TEST_F(BootstrapTest, ControllerCannotMintWorkloadsOrReadSecretsClusterWideAndOperatorCan) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto applied = bootstrap(ns.name());
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const std::string userdata_ns = ns.name();
  // The controller-manager fills the aggregated ClusterRoles shortly after they are applied.
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        auto r = cluster.kubectl(
            "auth can-i delete acmemachines.infrastructure.acme.example -n default "
            "--as=system:serviceaccount:banlieue-system:banlieue-operator");
        return contains(r.output, "yes");
      },
      std::chrono::seconds(30)))
      << "the operator's ClusterRole was not aggregated";
  const std::vector<std::pair<std::string, Access>> cases = {
      {"create deployments -n default", {false, true}},
      {"create roles -n default", {false, true}},
      {"create rolebindings -n default", {false, true}},
      {"create clusterrolebindings", {false, true}},
      {"get secrets -n kube-system", {false, true}},
      {"list secrets --all-namespaces", {false, false}},
      {"create clusterroles", {false, false}},
      {"get secrets -n " + userdata_ns, {true, true}},
      {"get configmaps -n " + userdata_ns, {true, true}},
      // A backend's banlieue-infrastructure-<backend> aggregates into both (docs/adr/0043):
      // the operator deletes a Provider's machines with it.
      {"create libvirtmachines.infrastructure.banlieue.io -n default", {true, true}},
      {"delete acmemachines.infrastructure.acme.example -n default", {true, true}},
      // A backend's own provider rights reach the operator, which binds them, not the
      // controller.
      {"update acmemachines.infrastructure.acme.example --subresource=finalizers -n default",
       {false, true}},
      {"patch providerclasses.banlieue.io --subresource=status", {false, true}},
      {"patch virtualmachines.banlieue.io --subresource=status -n default", {true, false}},
      {"update leases.coordination.k8s.io -n banlieue-system", {true, true}},
      {"update leases.coordination.k8s.io -n default", {false, true}},
  };
  for (const auto& [query, access] : cases) {
    for (bool is_operator : {false, true}) {
      std::string sa = is_operator ? "banlieue-operator" : "banlieue-controller";
      auto r = cluster.kubectl("auth can-i " + query +
                               " --as=system:serviceaccount:banlieue-system:" + sa);
      bool allowed = contains(r.output, "yes");
      bool want = is_operator ? access.operator_ : access.controller;
      EXPECT_EQ(allowed, want) << sa << " can-i " << query << ": " << r.output;
    }
  }
}

// Cluster API's convention (issue #24): its manager's ClusterRole aggregates every ClusterRole
// labelled cluster.x-k8s.io/aggregate-to-manager. Played here with a manager of our own: after
// bootstrap it reaches banlieue's infrastructure kinds and each backend's, and nothing else.
TEST_F(BootstrapTest, ClusterApisManagerReachesTheInfrastructureKindsByItsAggregationLabel) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  const std::string manager = "capi-manager-" + ns.name().substr(ns.name().size() - 5);
  auto role = cluster.apply(
      "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
      "metadata: {name: " +
      manager +
      "}\n"
      "aggregationRule:\n"
      "  clusterRoleSelectors:\n"
      "  - matchLabels: {cluster.x-k8s.io/aggregate-to-manager: \"true\"}\n"
      "---\n"
      "apiVersion: v1\nkind: ServiceAccount\n"
      "metadata: {name: capi-manager, namespace: " +
      ns.name() +
      "}\n"
      "---\n"
      "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
      "metadata: {name: " +
      manager +
      "}\n"
      "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: " +
      manager +
      "}\n"
      "subjects: [{kind: ServiceAccount, name: capi-manager, namespace: " +
      ns.name() + "}]\n");
  ASSERT_EQ(role.exit_code, 0) << role.output;
  auto applied = bootstrap(ns.name());
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const std::string as = " --as=system:serviceaccount:" + ns.name() + ":capi-manager";
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return contains(
            cluster
                .kubectl("auth can-i create vspheremachines.infrastructure.banlieue.io -n "
                         "default" +
                         as)
                .output,
            "yes");
      },
      std::chrono::seconds(30)))
      << cluster.kubectl("get clusterrole " + manager + " -o yaml").output;
  for (const auto* query : {"get vsphereclusters.infrastructure.banlieue.io -n default",
                            "patch libvirtmachinetemplates.infrastructure.banlieue.io -n default",
                            "delete acmemachines.infrastructure.acme.example -n default"}) {
    EXPECT_TRUE(contains(cluster.kubectl(std::string("auth can-i ") + query + as).output, "yes"))
        << query;
  }
  for (const auto* query : {"get secrets -n default", "get providers.banlieue.io -n default"}) {
    EXPECT_FALSE(contains(cluster.kubectl(std::string("auth can-i ") + query + as).output, "yes"))
        << query;
  }
  cluster.kubectl("delete clusterrolebinding " + manager + " --ignore-not-found");
  cluster.kubectl("delete clusterrole " + manager + " --ignore-not-found");
}

}  // namespace
}  // namespace banlieue
