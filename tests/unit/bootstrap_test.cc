// Plugin discovery and the objects bootstrap installs (pure builders; no cluster).
#include "host/roles/bootstrap/apply.h"
#include "host/roles/bootstrap/manifests.h"
#include "host/roles/bootstrap/plugin_discovery.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace banlieue::roles::bootstrap {
namespace {

namespace json = sdk::json;
namespace fs = std::filesystem;

class PluginDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("banlieue-bootstrap-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    ::chmod(root_.c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    for (auto p = (root_ / rel).parent_path(); p != root_; p = p.parent_path()) {
      ::chmod(p.c_str(), 0755);
    }
    std::ofstream(root_ / rel) << text;
    ::chmod((root_ / rel).c_str(), 0644);
  }

  void manifest(const std::string& dir, const std::string& name, const std::string& kinds,
                const std::string& crds = "[]") {
    write(dir + "/provider.json",
          R"({"manifestVersion":1,"name":")" + name +
              R"(","library":"lib.so",)"
              R"("abi":{"major":1},"providerVersion":"1.0","infrastructure":)" +
              kinds + R"(,"crds":)" + crds + "}");
  }

  static std::string acmeCrd(const std::string& group = "infrastructure.acme.example",
                             const std::string& kind = "AcmeMachine") {
    return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
           "metadata:\n  name: acmemachines." +
           group + "\nspec:\n  group: " + group + "\n  names: {kind: " + kind +
           ", plural: acmemachines}\n  scope: Namespaced\n"
           "  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: "
           "{type: object}}}]\n";
  }

  fs::path root_;
};

const char* kLibvirtKinds =
    R"([{"group":"infrastructure.banlieue.io","version":"v1beta2","kind":"LibvirtMachine"}])";
const char* kAcmeKinds =
    R"([{"group":"infrastructure.acme.example","version":"v1","kind":"AcmeMachine"}])";

TEST_F(PluginDir, MissingDirectoryIsAnEmptySetOnlyWhenAllowed) {
  auto none = discoverPlugins(root_ / "absent");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto strict = discoverPlugins(root_ / "absent", {.missing_ok = false});
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("does not exist"), std::string::npos);
}

TEST_F(PluginDir, FindsPluginsAndTheirCrdsSortedByName) {
  manifest("zz-libvirt", "libvirt", kLibvirtKinds);
  manifest("acme", "acme", kAcmeKinds, R"(["crds/acme.yaml"])");
  write("acme/crds/acme.yaml", acmeCrd());
  auto found = discoverPlugins(root_);
  ASSERT_TRUE(found.ok()) << found.status().message();
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].manifest.name, "acme");
  EXPECT_EQ((*found)[0].crds.size(), 1u);
  EXPECT_EQ((*found)[1].manifest.name, "libvirt");
}

TEST_F(PluginDir, RefusesCrdsForKindsThePluginDoesNotServe) {
  manifest("acme", "acme", kLibvirtKinds, R"(["acme.yaml"])");
  write("acme/acme.yaml", acmeCrd());
  auto found = discoverPlugins(root_);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().reason(), "InvalidPluginCrd");
  EXPECT_NE(found.status().message().find("does not list"), std::string::npos);
}

TEST_F(PluginDir, RefusesCrdsRedefiningBanlieueKinds) {
  manifest("evil", "evil", kLibvirtKinds, R"(["x.yaml"])");
  write("evil/x.yaml", acmeCrd("infrastructure.banlieue.io", "LibvirtMachine"));
  auto found = discoverPlugins(root_);
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.status().message().find("redefines banlieue's own kind"), std::string::npos)
      << found.status().message();
}

TEST_F(PluginDir, RefusesCrdFilesReachedThroughSymlinks) {
  manifest("acme", "acme", kAcmeKinds, R"(["crds/acme.yaml"])");
  write("elsewhere.yaml", acmeCrd());
  fs::create_directories(root_ / "acme" / "crds");
  fs::create_symlink(root_ / "elsewhere.yaml", root_ / "acme" / "crds" / "acme.yaml");
  auto found = discoverPlugins(root_);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().reason(), "PluginFileIsSymlink") << found.status().message();
}

TEST_F(PluginDir, RefusesBrokenManifestsAndDuplicateNames) {
  manifest("a", "same", kLibvirtKinds);
  manifest("b", "same", kLibvirtKinds);
  auto dup = discoverPlugins(root_);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().reason(), "DuplicatePluginName");
  write("b/provider.json", "{not json");
  auto broken = discoverPlugins(root_);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("provider.json"), std::string::npos);
}

TEST_F(PluginDir, RefusesAWorldWritablePluginDirectory) {
  manifest("a", "libvirt", kLibvirtKinds);
  ::chmod(root_.c_str(), 0777);
  auto found = discoverPlugins(root_);
  EXPECT_FALSE(found.ok());
}

TEST(ImageReferenceTest, SplitsRepositoryTagAndDigest) {
  auto a = parseImageReference("localhost/banlieue:0.1.0");
  EXPECT_EQ(a.repository, "localhost/banlieue");
  EXPECT_EQ(a.tag, "0.1.0");
  auto b = parseImageReference("registry:5000/team/banlieue");
  EXPECT_EQ(b.repository, "registry:5000/team/banlieue");
  EXPECT_EQ(b.tag, "");
  auto c = parseImageReference("r.io/b:1@sha256:abc");
  EXPECT_EQ(c.repository, "r.io/b");
  EXPECT_EQ(c.tag, "1");
  EXPECT_EQ(c.digest, "sha256:abc");
  EXPECT_EQ(defaultImage().rfind("localhost/banlieue:", 0), 0u);
}

std::vector<DiscoveredPlugin> libvirtPlugin() {
  DiscoveredPlugin p;
  p.manifest.name = "libvirt";
  p.manifest.directory = "/plugins/libvirt";
  p.manifest.infrastructure = {{"infrastructure.banlieue.io", "v1beta2", "LibvirtMachine"}};
  std::vector<DiscoveredPlugin> out;
  out.push_back(std::move(p));
  return out;
}

const rapidjson::Value* find(const std::vector<rapidjson::Document>& objects,
                             const std::string& kind, const std::string& name) {
  for (const auto& o : objects) {
    if (json::stringOr(&o, "kind") == kind &&
        json::stringOr(json::member(&o, "metadata"), "name") == name) {
      return &o;
    }
  }
  return nullptr;
}

// True when some rule of the role grants `verb` on `resource` in `group`.
bool grants(const rapidjson::Value& role, const std::string& group, const std::string& resource,
            const std::string& verb) {
  for (const auto& rule : role["rules"].GetArray()) {
    auto has = [&](const char* field, const std::string& want) {
      for (const auto& v : rule[field].GetArray()) {
        if (want == v.GetString() || std::string(v.GetString()) == "*") return true;
      }
      return false;
    };
    if (has("apiGroups", group) && has("resources", resource) && has("verbs", verb)) return true;
  }
  return false;
}

// Appends to `rules` the rules of every ClusterRole among `objects` whose label `key` is
// `value` (label keys hold dots: looked up as members, not as a path).
void appendLabelled(const std::vector<rapidjson::Document>& objects, const std::string& key,
                    const std::string& value, rapidjson::Value& rules,
                    rapidjson::Document::AllocatorType& a) {
  for (const auto& o : objects) {
    if (json::stringOr(&o, "kind") != "ClusterRole") continue;
    const auto* labels = json::find(&o, "metadata.labels");
    if (labels == nullptr) continue;
    auto it = labels->FindMember(key.c_str());
    if (it == labels->MemberEnd() || !it->value.IsString() || it->value.GetString() != value) {
      continue;
    }
    for (const auto& r : o["rules"].GetArray()) rules.PushBack(rapidjson::Value(r, a), a);
  }
}

// The rules an aggregated ClusterRole selecting `label: "true"` would hold among `objects`.
rapidjson::Document effectiveBySelector(const std::vector<rapidjson::Document>& objects,
                                        const std::string& label) {
  rapidjson::Document out(rapidjson::kObjectType);
  auto& a = out.GetAllocator();
  rapidjson::Value rules(rapidjson::kArrayType);
  appendLabelled(objects, label, "true", rules, a);
  out.AddMember("rules", rules, a);
  return out;
}

// The rules a ClusterRole holds once the controller-manager has aggregated it: its own, or,
// with an aggregationRule, those of every ClusterRole among `objects` carrying a selected
// label (what a cluster with only bootstrap's objects would give it).
rapidjson::Document effective(const std::vector<rapidjson::Document>& objects,
                              const std::string& name) {
  rapidjson::Document out(rapidjson::kObjectType);
  auto& a = out.GetAllocator();
  rapidjson::Value rules(rapidjson::kArrayType);
  const auto* role = find(objects, "ClusterRole", name);
  if (role != nullptr) {
    const auto* selectors = json::find(role, "aggregationRule.clusterRoleSelectors");
    if (selectors == nullptr) {
      for (const auto& r : (*role)["rules"].GetArray()) rules.PushBack(rapidjson::Value(r, a), a);
    } else {
      EXPECT_FALSE(role->HasMember("rules")) << name << ": the aggregation fills its rules";
      for (const auto& selector : selectors->GetArray()) {
        for (const auto& label : selector["matchLabels"].GetObject()) {
          appendLabelled(objects, label.name.GetString(), label.value.GetString(), rules, a);
        }
      }
    }
  }
  out.AddMember("rules", rules, a);
  return out;
}

TEST(BootstrapManifestsTest, OrderAndContents) {
  BootstrapOptions options;
  options.image = "localhost/banlieue:9.9.9";
  options.userdata_namespaces = {"team-a", "team-b"};
  auto objects = buildBootstrapObjects(options, libvirtPlugin());
  ASSERT_FALSE(objects.empty());
  EXPECT_EQ(json::stringOr(&objects[0], "kind"), "Namespace");
  EXPECT_EQ(json::stringOr(&objects[1], "kind"), "Namespace");
  EXPECT_EQ(json::stringOr(&objects[1], "metadata.name"), "banlieue-imagebuild");
  size_t last_crd = 0;
  size_t first_other = objects.size();
  for (size_t i = 2; i < objects.size(); ++i) {
    bool crd = json::stringOr(&objects[i], "kind") == "CustomResourceDefinition";
    if (crd) last_crd = i;
    if (!crd && first_other == objects.size()) first_other = i;
    auto type = resourceTypeOf(objects[i]);
    EXPECT_TRUE(type.ok()) << type.status().message();
  }
  EXPECT_LT(last_crd, first_other);
  EXPECT_EQ(last_crd, 19u);  // 2 namespaces, then 18 CRDs

  const auto* pc = find(objects, "ProviderClass", "libvirt");
  ASSERT_NE(pc, nullptr);
  EXPECT_EQ(json::stringOr(&(*pc)["spec"]["plugin"], "path"), "/usr/lib/banlieue/plugins/libvirt");
  EXPECT_EQ(json::stringOr(&(*pc)["spec"]["image"], "tag"), "9.9.9");
  ASSERT_NE(find(objects, "ClusterRole", "banlieue-provider-libvirt"), nullptr);
  EXPECT_NE(find(objects, "RoleBinding", "banlieue-controller-userdata"), nullptr);
  int userdata_bindings = 0;
  for (const auto& o : objects) {
    if (json::stringOr(json::member(&o, "metadata"), "name") == "banlieue-controller-userdata" &&
        json::stringOr(&o, "kind") == "RoleBinding") {
      ++userdata_bindings;
    }
  }
  EXPECT_EQ(userdata_bindings, 2);

  const auto* deployment = find(objects, "Deployment", "banlieue-operator");
  ASSERT_NE(deployment, nullptr);
  const auto& container = (*deployment)["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(json::stringOr(&container, "image"), "localhost/banlieue:9.9.9");
  EXPECT_STREQ(container["args"][0].GetString(), "operator");
  // Only the Lease holder is ready: the old pod goes first or a rollout never finishes.
  EXPECT_EQ(json::integer(deployment, "spec.strategy.rollingUpdate.maxSurge"), 0);
  EXPECT_EQ(json::stringOr(deployment, "spec.strategy.rollingUpdate.maxUnavailable"), "100%");

  // The image pipeline: the imagebuilder runs in the install namespace, not the build one (a
  // provider may run Jobs there, and a Job may use any ServiceAccount of its namespace).
  const auto* builder = find(objects, "Deployment", "banlieue-imagebuilder");
  ASSERT_NE(builder, nullptr);
  EXPECT_EQ(json::stringOr(&(*builder)["metadata"], "namespace"), "banlieue-system");
  const auto& builder_args = (*builder)["spec"]["template"]["spec"]["containers"][0]["args"];
  EXPECT_STREQ(builder_args[0].GetString(), "imagebuilder");
  EXPECT_STREQ(builder_args[2].GetString(), "banlieue-imagebuild");
  const auto* import_sa = find(objects, "ServiceAccount", "banlieue-image-import");
  ASSERT_NE(import_sa, nullptr);
  EXPECT_EQ(json::stringOr(&(*import_sa)["metadata"], "namespace"), "banlieue-imagebuild");

  options.provider_classes = false;
  options.crds = false;
  auto slim = buildBootstrapObjects(options, libvirtPlugin());
  EXPECT_EQ(find(slim, "ProviderClass", "libvirt"), nullptr);
  EXPECT_EQ(find(slim, "CustomResourceDefinition", "vmimages.banlieue.io"), nullptr);
}

TEST(BootstrapManifestsTest, ControllerIsLeastPrivilegeAndOperatorMintsWorkloads) {
  BootstrapOptions options;
  options.image = defaultImage();
  auto objects = buildBootstrapObjects(options, libvirtPlugin());
  ASSERT_NE(find(objects, "ClusterRole", "banlieue-controller"), nullptr);
  ASSERT_NE(find(objects, "ClusterRole", "banlieue-operator"), nullptr);
  // Aggregated (docs/adr/0043): a backend's roles join them by label.
  auto controller_rules = effective(objects, "banlieue-controller");
  auto operator_rules = effective(objects, "banlieue-operator");
  const auto* controller = &controller_rules;
  const auto* op = &operator_rules;
  for (const auto* resource : {"secrets", "configmaps"}) {
    EXPECT_FALSE(grants(*controller, "", resource, "get")) << resource;
    EXPECT_FALSE(grants(*controller, "", resource, "list")) << resource;
  }
  EXPECT_FALSE(grants(*controller, "apps", "deployments", "create"));
  EXPECT_FALSE(grants(*controller, "rbac.authorization.k8s.io", "roles", "create"));
  EXPECT_FALSE(grants(*controller, "coordination.k8s.io", "leases", "create"));
  EXPECT_TRUE(grants(*controller, "infrastructure.banlieue.io", "libvirtmachines", "create"));
  EXPECT_TRUE(grants(*controller, "banlieue.io", "virtualmachines/status", "patch"));
  EXPECT_TRUE(grants(*controller, "banlieue.io", "vmclasses/status", "patch"));

  EXPECT_TRUE(grants(*op, "apps", "deployments", "create"));
  EXPECT_TRUE(grants(*op, "apps", "replicasets", "delete")) << "stale ReplicaSets";
  EXPECT_FALSE(grants(*op, "apps", "replicasets", "create"));
  EXPECT_TRUE(grants(*op, "rbac.authorization.k8s.io", "clusterrolebindings", "create"));
  EXPECT_FALSE(grants(*op, "rbac.authorization.k8s.io", "clusterroles", "create"));
  EXPECT_FALSE(grants(*op, "rbac.authorization.k8s.io", "clusterroles", "escalate"));
  EXPECT_FALSE(grants(*op, "rbac.authorization.k8s.io", "clusterroles", "bind"));
  // The operator binds banlieue-provider-libvirt and banlieue-provider, so it must hold
  // everything those grant, and deletes a Provider's infrastructure objects.
  const auto* provider = find(objects, "ClusterRole", "banlieue-provider-libvirt");
  ASSERT_NE(provider, nullptr);
  const auto* base = find(objects, "ClusterRole", "banlieue-provider");
  ASSERT_NE(base, nullptr);
  const auto* infrastructure = find(objects, "ClusterRole", "banlieue-infrastructure-libvirt");
  ASSERT_NE(infrastructure, nullptr);
  // A provider pod updates its kinds but neither creates nor deletes them.
  EXPECT_TRUE(grants(*provider, "infrastructure.banlieue.io", "libvirtmachines", "patch"));
  EXPECT_FALSE(grants(*provider, "infrastructure.banlieue.io", "libvirtmachines", "create"));
  EXPECT_FALSE(grants(*provider, "infrastructure.banlieue.io", "libvirtmachines", "delete"));
  EXPECT_TRUE(grants(*base, "banlieue.io", "providerclasses/status", "patch"));
  EXPECT_FALSE(grants(*base, "banlieue.io", "providerclasses", "patch"));
  EXPECT_TRUE(grants(*op, "infrastructure.banlieue.io", "libvirtmachines", "delete"));
  // Cluster API's manager reaches every infrastructure kind through its aggregation label
  // (issue #24): banlieue's own kinds and each backend's.
  auto capi = effectiveBySelector(objects, "cluster.x-k8s.io/aggregate-to-manager");
  EXPECT_TRUE(grants(capi, "infrastructure.banlieue.io", "libvirtmachines", "create"));
  EXPECT_TRUE(grants(capi, "infrastructure.banlieue.io", "vsphereclusters", "get"));
  EXPECT_TRUE(grants(capi, "infrastructure.banlieue.io", "vspheremachinetemplates", "get"));
  EXPECT_FALSE(grants(capi, "", "secrets", "get"));
  EXPECT_FALSE(grants(capi, "banlieue.io", "providers", "get"));
  // Jobs only in the build namespace: cluster-wide they could run as any ServiceAccount.
  EXPECT_FALSE(grants(*provider, "batch", "jobs", "create"));
  EXPECT_FALSE(grants(*op, "batch", "jobs", "create"));
  const auto* imports = find(objects, "ClusterRole", "banlieue-provider-imports");
  ASSERT_NE(imports, nullptr);
  EXPECT_TRUE(grants(*imports, "batch", "jobs", "create"));
  EXPECT_TRUE(grants(*imports, "", "pods", "watch"));
  EXPECT_FALSE(grants(*imports, "", "pods", "create"));
  EXPECT_TRUE(grants(*imports, "", "pods/log", "get")) << "import progress";
  EXPECT_FALSE(grants(*imports, "", "pods/exec", "create"));
  const auto* op_imports = find(objects, "RoleBinding", "banlieue-operator-imports");
  ASSERT_NE(op_imports, nullptr);
  EXPECT_EQ(json::stringOr(&(*op_imports)["metadata"], "namespace"), "banlieue-imagebuild");
  EXPECT_EQ(json::stringOr(&(*op_imports)["roleRef"], "name"), "banlieue-provider-imports");
  // The import Jobs read VMImages only; Providers and Secrets come from the operator's Roles.
  const auto* import_role = find(objects, "ClusterRole", "banlieue-image-import");
  ASSERT_NE(import_role, nullptr);
  EXPECT_TRUE(grants(*import_role, "banlieue.io", "vmimages", "get"));
  EXPECT_FALSE(grants(*import_role, "banlieue.io", "vmimages", "list"));
  EXPECT_FALSE(grants(*import_role, "", "secrets", "get"));
  // The imagebuilder: VMImages and their status cluster-wide; Secrets only in the build
  // namespace (a RoleBinding of its -build ClusterRole there).
  const auto* builder = find(objects, "ClusterRole", "banlieue-imagebuilder");
  ASSERT_NE(builder, nullptr);
  EXPECT_TRUE(grants(*builder, "banlieue.io", "vmimages/status", "patch"));
  EXPECT_FALSE(grants(*builder, "banlieue.io", "vmimages", "patch"));
  EXPECT_FALSE(grants(*builder, "", "secrets", "get"));
  const auto* build_binding = find(objects, "RoleBinding", "banlieue-imagebuilder-build");
  ASSERT_NE(build_binding, nullptr);
  EXPECT_EQ(json::stringOr(&(*build_binding)["metadata"], "namespace"), "banlieue-imagebuild");
  EXPECT_TRUE(grants(*find(objects, "ClusterRole", "banlieue-imagebuilder-build"),
                     "build.kairos.io", "osartifacts", "create"));
  for (const auto* bound : {provider, base}) {
    for (const auto& rule : (*bound)["rules"].GetArray()) {
      for (const auto& g : rule["apiGroups"].GetArray()) {
        for (const auto& r : rule["resources"].GetArray()) {
          for (const auto& v : rule["verbs"].GetArray()) {
            EXPECT_TRUE(grants(*op, g.GetString(), r.GetString(), v.GetString()))
                << g.GetString() << "/" << r.GetString() << " " << v.GetString();
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace banlieue::roles::bootstrap
