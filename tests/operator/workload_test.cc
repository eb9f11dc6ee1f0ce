// The operator's pure builders: names, labels, owner references, Role rules and the
// Deployment handed to the provider runtime.
#include "host/roles/operator/workload.h"
#include "host/api/codec.h"
#include "host/common/fnv_hash.h"
#include "host/roles/operator/provider_reconciler.h"
#include "host/roles/operator/workload_names.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

namespace banlieue::roles::provider_operator {
namespace {

using sdk::json::find;
using sdk::json::stringOr;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A label or selector value: the keys contain dots, so they are members, not paths.
std::string label(const rapidjson::Value* labels, const char* key) {
  const auto* v = sdk::json::member(labels, key);
  return v != nullptr && v->IsString() ? v->GetString() : "";
}

api::Provider provider(const std::string& ns = "team-a", const std::string& name = "lab") {
  api::Provider p;
  p.metadata.name = name;
  p.metadata.namespace_ = ns;
  p.metadata.uid = "0b5e-uid";
  p.spec.provider_class_ref.name = "file";
  p.spec.connection.endpoint = "file:///var/lib/vms";
  p.spec.connection.credentials_ref = api::LocalObjectReference{"lab-credentials"};
  return p;
}

api::ProviderClass managedClass() {
  api::ProviderClass c;
  c.metadata.name = "file";
  c.spec.backend = "file";
  c.spec.plugin = api::PluginRef{"/usr/lib/banlieue/plugins/file"};
  c.spec.image = api::ContainerImage{"localhost/banlieue", "0.1.0", "", "IfNotPresent", {}};
  return c;
}

const MintedObject* find(const Workload& w, const std::string& plural, const std::string& name) {
  for (const auto& o : w.objects) {
    if (o.type.plural == plural && o.name == name) return &o;
  }
  return nullptr;
}

std::vector<std::string> strings(const rapidjson::Value* array) {
  std::vector<std::string> out;
  if (array == nullptr) return out;
  for (const auto& v : array->GetArray()) out.emplace_back(v.GetString());
  return out;
}

TEST(WorkloadNames, ShortNamesStayAsTheyAre) {
  EXPECT_EQ(workloadName("file", "lab"), "banlieue-provider-file-lab");
  EXPECT_EQ(clusterScopedName("file", "team-a", "lab"), "banlieue-provider-file-team-a-lab");
  EXPECT_EQ(capName(std::string(63, 'a')), std::string(63, 'a'));
}

TEST(WorkloadNames, LongNamesAreCappedWithAStableHashOfTheFullName) {
  std::string provider(60, 'p');
  std::string name = workloadName("vsphere", provider);
  EXPECT_EQ(name.size(), 63U);
  std::string full = "banlieue-provider-vsphere-" + provider;
  EXPECT_EQ(name.substr(0, 54), full.substr(0, 54));
  EXPECT_EQ(name, workloadName("vsphere", provider));
  // Same 54-character prefix, different tails: different names.
  EXPECT_NE(name, workloadName("vsphere", provider + "x"));
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", common::fnv1a32(full));
  EXPECT_EQ(name.substr(54), std::string("-") + hex);
}

TEST(WorkloadNames, TrailingDashesAreTrimmedBeforeTheSuffix) {
  // Character 54 of the full name is a '-': the head loses it.
  std::string name = capName(std::string(53, 'a') + "-" + std::string(20, 'b'));
  EXPECT_EQ(name.size(), 62U);
  EXPECT_EQ(name.substr(0, 54), std::string(53, 'a') + "-");
  EXPECT_EQ(name[53], '-');
  EXPECT_NE(name[52], '-');
}

TEST(Workload, ManagedMintsEverythingInOrderWithLabelsAndOwners) {
  auto w = buildWorkload(provider(), managedClass(), {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::vector<std::string> order;
  for (const auto& o : w->objects) order.push_back(o.type.plural + "/" + o.name);
  EXPECT_THAT(order, ElementsAre("serviceaccounts/banlieue-provider-file-lab",
                                 "roles/banlieue-provider-file-lab",
                                 "rolebindings/banlieue-provider-file-lab",
                                 "roles/banlieue-provider-file-lab-import",
                                 "rolebindings/banlieue-provider-file-lab-import",
                                 "rolebindings/banlieue-provider-file-team-a-lab",
                                 "clusterrolebindings/banlieue-provider-file-team-a-lab",
                                 "clusterrolebindings/banlieue-provider-file-team-a-lab-base",
                                 "deployments/banlieue-provider-file-lab"));
  for (const auto& o : w->objects) {
    const auto* labels = find(&o.body, "metadata.labels");
    ASSERT_NE(labels, nullptr);
    EXPECT_EQ(label(labels, "app.kubernetes.io/name"), "banlieue");
    EXPECT_EQ(label(labels, "app.kubernetes.io/component"), "provider-file");
    EXPECT_EQ(label(labels, "app.kubernetes.io/managed-by"), "banlieue-operator");
    EXPECT_EQ(label(labels, "app.kubernetes.io/instance"), "banlieue-provider-file-lab");
    EXPECT_EQ(label(labels, "banlieue.io/provider"), "lab");
    EXPECT_EQ(label(labels, "banlieue.io/provider-namespace"), "team-a");
    EXPECT_EQ(label(labels, "banlieue.io/provider-class"), "file");
    const auto* owners = find(&o.body, "metadata.ownerReferences");
    if (o.type.plural == "clusterrolebindings") {
      // No namespaced owner can reclaim a cluster-scoped object: the finalizer does.
      EXPECT_EQ(owners, nullptr);
      EXPECT_EQ(find(&o.body, "metadata.namespace"), nullptr);
    } else if (o.ns == "banlieue-imagebuild") {
      // Owners in another namespace are ignored by the garbage collector: the finalizer.
      EXPECT_EQ(owners, nullptr);
    } else {
      EXPECT_EQ(o.ns, "team-a");
      ASSERT_NE(owners, nullptr);
      const auto& ref = (*owners)[0];
      EXPECT_EQ(stringOr(&ref, "kind", ""), "Provider");
      EXPECT_EQ(stringOr(&ref, "uid", ""), "0b5e-uid");
      EXPECT_TRUE(sdk::json::boolean(&ref, "controller"));
      EXPECT_TRUE(sdk::json::boolean(&ref, "blockOwnerDeletion"));
    }
    EXPECT_EQ(w->keep.count({o.type.plural, o.ns, o.name}), 1U);
  }
  const auto* crb = find(*w, "clusterrolebindings", "banlieue-provider-file-team-a-lab");
  EXPECT_EQ(stringOr(&crb->body, "roleRef.name", ""), "banlieue-provider-file");
  EXPECT_EQ(stringOr(&crb->body, "roleRef.kind", ""), "ClusterRole");
  EXPECT_EQ(stringOr(&(*find(&crb->body, "subjects"))[0], "namespace", ""), "team-a");
  const auto* import = find(*w, "rolebindings", "banlieue-provider-file-lab-import");
  const auto& import_subject = (*find(&import->body, "subjects"))[0];
  EXPECT_EQ(stringOr(&import_subject, "name", ""), "banlieue-image-import");
  EXPECT_EQ(stringOr(&import_subject, "namespace", ""), "banlieue-imagebuild");
  // The provider manages its import Jobs in the build namespace only, through bootstrap's
  // ClusterRole bound there.
  const auto* jobs = find(*w, "rolebindings", "banlieue-provider-file-team-a-lab");
  ASSERT_NE(jobs, nullptr);
  EXPECT_EQ(jobs->ns, "banlieue-imagebuild");
  EXPECT_EQ(stringOr(&jobs->body, "roleRef.kind", ""), "ClusterRole");
  EXPECT_EQ(stringOr(&jobs->body, "roleRef.name", ""), "banlieue-provider-imports");
  EXPECT_EQ(find(&jobs->body, "metadata.ownerReferences"), nullptr);
  const auto& jobs_subject = (*find(&jobs->body, "subjects"))[0];
  EXPECT_EQ(stringOr(&jobs_subject, "name", ""), "banlieue-provider-file-lab");
  EXPECT_EQ(stringOr(&jobs_subject, "namespace", ""), "team-a");
}

TEST(Workload, TheSecretRuleNamesExactlyTheProvidersSecrets) {
  auto p = provider();
  api::CABundleSource ca;
  ca.secret_ref = api::KeySelector{"lab-ca", "ca.crt"};
  p.spec.connection.ca_bundle = ca;
  auto rules = providerRoleRules(p, managedClass(), "banlieue-provider-file-lab");
  int secret_rules = 0;
  for (const auto& r : rules) {
    if (r.resources == std::vector<std::string>{"secrets"}) {
      ++secret_rules;
      EXPECT_THAT(r.resource_names, ElementsAre("lab-credentials", "lab-ca"));
      EXPECT_THAT(r.verbs, ElementsAre("get"));
    }
    // resourceNames cannot restrict create: a named rule never carries it, except a token
    // for the SA itself (External only).
    if (!r.resource_names.empty()) {
      for (const auto& verb : r.verbs) EXPECT_NE(verb, "create") << r.resources[0];
    }
  }
  EXPECT_EQ(secret_rules, 1);
}

// The console server reads the VM behind a request (docs/adr/0040): get, in the Provider's
// namespace only (a Role), nothing more on VirtualMachines.
TEST(Workload, TheRoleReadsVirtualMachinesForConsolesAndNothingMore) {
  auto rules = providerRoleRules(provider(), managedClass(), "banlieue-provider-file-lab");
  int vm_rules = 0;
  for (const auto& r : rules) {
    if (std::find(r.resources.begin(), r.resources.end(), "virtualmachines") == r.resources.end())
      continue;
    ++vm_rules;
    EXPECT_THAT(r.api_groups, ElementsAre("banlieue.io"));
    EXPECT_THAT(r.verbs, ElementsAre("get"));
    EXPECT_TRUE(r.resource_names.empty());
  }
  EXPECT_EQ(vm_rules, 1);
}

TEST(Workload, NoCredentialsMeansNoSecretAccessAtAll) {
  auto p = provider();
  p.spec.connection.credentials_ref.reset();
  auto w = buildWorkload(p, managedClass(), {});
  ASSERT_TRUE(w.ok());
  for (const auto& o : w->objects) {
    if (o.type.plural != "roles") continue;
    for (const auto& r : find(&o.body, "rules")->GetArray()) {
      EXPECT_THAT(strings(find(&r, "resources")), ::testing::Not(::testing::Contains("secrets")))
          << o.name;
      // An empty resourceNames list would grant every object of the resource.
      if (const auto* names = find(&r, "resourceNames")) {
        EXPECT_FALSE(names->Empty());
      }
    }
  }
}

// In a namespace where userData is enabled: Secrets of the namespace by any name (its machines'
// rendered userData, whose names RBAC cannot know in advance: docs/adr/0026), and still never
// list or watch, which would hand it every Secret's content at once.
TEST(Workload, WithUserDataSecretsAreReadByNameAndNeverListedOrWatched) {
  auto w = buildWorkload(provider(), managedClass(), {}, /*reads_user_data=*/true);
  ASSERT_TRUE(w.ok());
  int secret_rules = 0;
  for (const auto& o : w->objects) {
    // The provider's own Role (its import Jobs' Role keeps naming the connection's Secrets).
    if (o.type.plural != "roles" || o.name != w->name) continue;
    for (const auto& r : find(&o.body, "rules")->GetArray()) {
      if (!::testing::Matches(::testing::Contains("secrets"))(strings(find(&r, "resources")))) {
        continue;
      }
      ++secret_rules;
      EXPECT_THAT(strings(find(&r, "verbs")), ElementsAre("get")) << o.name;
      EXPECT_EQ(find(&r, "resourceNames"), nullptr) << o.name;
    }
  }
  EXPECT_EQ(secret_rules, 1);
}

TEST(Workload, TheDeploymentRunsTheProviderRuntimeByContract) {
  auto c = managedClass();
  c.spec.logging = api::LoggingSpec{"debug", "json"};
  c.spec.replicas = 0;  // clamped
  auto w = buildWorkload(provider(), c, {"/opt/plugins", "builds"});
  ASSERT_TRUE(w.ok());
  const auto* d = find(*w, "deployments", "banlieue-provider-file-lab");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(sdk::json::integer(&d->body, "spec.replicas"), 1);
  // Only the leader is ready: old pods go first or a rollout never finishes (found by e2e).
  EXPECT_EQ(sdk::json::integer(&d->body, "spec.strategy.rollingUpdate.maxSurge"), 0);
  EXPECT_EQ(stringOr(&d->body, "spec.strategy.rollingUpdate.maxUnavailable", ""), "100%");
  const auto* selector = find(&d->body, "spec.selector.matchLabels");
  EXPECT_EQ(selector->MemberCount(), 3U);
  EXPECT_EQ(label(selector, "banlieue.io/provider"), "lab");
  EXPECT_EQ(stringOr(&d->body, "spec.template.spec.serviceAccountName", ""),
            "banlieue-provider-file-lab");
  const auto& container = (*find(&d->body, "spec.template.spec.containers"))[0];
  EXPECT_EQ(stringOr(&container, "name", ""), "provider");
  EXPECT_EQ(stringOr(&container, "image", ""), "localhost/banlieue:0.1.0");
  EXPECT_THAT(
      strings(find(&container, "args")),
      ElementsAre("--log-level", "debug", "--log-format", "json", "provider", "file", "--provider",
                  "team-a/lab", "--plugin-dir", "/opt/plugins", "--leader-election-id",
                  "banlieue-provider-file-lab", "--leader-election-namespace", "team-a",
                  "--state-dir", "/var/lib/banlieue", "--metrics-bind-address", "127.0.0.1",
                  "--console-port", "8086"));
  // A read-only root filesystem: the crash journal and /tmp are the pod's own emptyDirs.
  EXPECT_TRUE(sdk::json::boolean(&container, "securityContext.readOnlyRootFilesystem", false));
  const auto* mounts = find(&container, "volumeMounts");
  ASSERT_NE(mounts, nullptr);
  ASSERT_EQ(mounts->Size(), 2U);
  EXPECT_EQ(stringOr(&(*mounts)[0], "mountPath", ""), "/var/lib/banlieue");
  EXPECT_EQ(stringOr(&(*mounts)[1], "mountPath", ""), "/tmp");
  const auto* volumes = find(&d->body, "spec.template.spec.volumes");
  ASSERT_NE(volumes, nullptr);
  ASSERT_EQ(volumes->Size(), 2U);
  for (const auto& v : volumes->GetArray()) {
    EXPECT_TRUE(v.HasMember("emptyDir")) << stringOr(&v, "name", "");
    EXPECT_FALSE(v.HasMember("hostPath")) << stringOr(&v, "name", "");
  }
  EXPECT_EQ(stringOr(&container, "readinessProbe.httpGet.path", ""), "/readyz");
  EXPECT_EQ(stringOr(&container, "livenessProbe.httpGet.path", ""), "/healthz");
  EXPECT_EQ(stringOr(&container, "readinessProbe.httpGet.port", ""), "health");
  const auto* ports = find(&container, "ports");
  EXPECT_EQ(stringOr(&(*ports)[0], "name", ""), "metrics");
  EXPECT_EQ(sdk::json::integer(&(*ports)[0], "containerPort"), 8080);
  EXPECT_EQ(sdk::json::integer(&(*ports)[1], "containerPort"), 8081);
  // Consoles (docs/adr/0040): the server listens on loopback; the name documents the port
  // that `banlieue vm console` forwards to.
  EXPECT_EQ(stringOr(&(*ports)[2], "name", ""), "console");
  EXPECT_EQ(sdk::json::integer(&(*ports)[2], "containerPort"), 8086);
  const auto* env = find(&container, "env");
  EXPECT_EQ(stringOr(&(*env)[0], "valueFrom.fieldRef.fieldPath", ""), "metadata.name");
  EXPECT_EQ(stringOr(&(*env)[1], "valueFrom.fieldRef.fieldPath", ""), "metadata.namespace");
  EXPECT_EQ(stringOr(&container, "resources.requests.memory", ""), "128Mi");
  EXPECT_FALSE(sdk::json::boolean(&container, "securityContext.allowPrivilegeEscalation", true));
  EXPECT_TRUE(sdk::json::boolean(&d->body, "spec.template.spec.securityContext.runAsNonRoot"));
  const auto* import = find(*w, "rolebindings", "banlieue-provider-file-lab-import");
  EXPECT_EQ(stringOr(&(*find(&import->body, "subjects"))[0], "namespace", ""), "builds");
}

// A platform team sets HTTPS_PROXY and NO_PROXY once, on the operator; every provider pod gets
// them, so its plugin reaches the backend the same way (issue #25).
TEST(Workload, TheOperatorsProxySettingsReachTheProviderContainer) {
  WorkloadOptions options{"/opt/plugins",
                          "builds",
                          {{"HTTPS_PROXY", "http://proxy.example.test:3128"},
                           {"NO_PROXY", ".cluster.local,10.0.0.0/8"}}};
  auto w = buildWorkload(provider(), managedClass(), options);
  ASSERT_TRUE(w.ok());
  const auto* d = find(*w, "deployments", "banlieue-provider-file-lab");
  ASSERT_NE(d, nullptr);
  const auto& container = (*find(&d->body, "spec.template.spec.containers"))[0];
  std::map<std::string, std::string> values;
  for (const auto& var : find(&container, "env")->GetArray()) {
    values[stringOr(&var, "name", "")] = stringOr(&var, "value", "");
  }
  EXPECT_EQ(values["HTTPS_PROXY"], "http://proxy.example.test:3128");
  EXPECT_EQ(values["NO_PROXY"], ".cluster.local,10.0.0.0/8");
  // None set: none passed on.
  auto plain = buildWorkload(provider(), managedClass(), {"/opt/plugins", "builds"});
  ASSERT_TRUE(plain.ok());
  const auto& bare = (*find(&find(*plain, "deployments", "banlieue-provider-file-lab")->body,
                            "spec.template.spec.containers"))[0];
  EXPECT_EQ(find(&bare, "env")->Size(), 2U);
}

TEST(Workload, MintedObjectsMapBackToTheirProvider) {
  auto w = buildWorkload(provider(), managedClass(), {});
  ASSERT_TRUE(w.ok());
  for (const auto& o : w->objects) EXPECT_EQ(ownerProviderKey(o.body), "team-a/lab") << o.name;
  rapidjson::Document unlabelled;
  unlabelled.Parse(R"({"metadata":{"name":"x","labels":{"banlieue.io/provider":"lab"}}})");
  EXPECT_EQ(ownerProviderKey(unlabelled), "");
  rapidjson::Document p;
  p.Parse(R"({"spec":{"providerClassRef":{"name":"file"}}})");
  EXPECT_THAT(providerClassIndex(p), ElementsAre("file"));
}

TEST(Workload, EveryObjectCarriesTheHashOfItsDesiredState) {
  auto hashOf = [](const MintedObject& o) {
    return label(find(&o.body, "metadata.annotations"), kAppliedHashAnnotation);
  };
  auto first = buildWorkload(provider(), managedClass(), {});
  auto again = buildWorkload(provider(), managedClass(), {});
  auto c = managedClass();
  c.spec.image->tag = "2.0.0";
  auto edited = buildWorkload(provider(), c, {});
  ASSERT_TRUE(first.ok() && again.ok() && edited.ok());
  for (size_t i = 0; i < first->objects.size(); ++i) {
    EXPECT_EQ(hashOf(first->objects[i]).size(), 16U);
    EXPECT_EQ(hashOf(first->objects[i]), hashOf(again->objects[i]));
  }
  EXPECT_NE(hashOf(first->objects.back()), hashOf(edited->objects.back()));  // the Deployment
  EXPECT_EQ(hashOf(first->objects.front()), hashOf(edited->objects.front()));
}

TEST(Workload, AWorkloadNamespaceMovesTheDeploymentButNotTheRoles) {
  auto c = managedClass();
  c.spec.workload_namespace = "providers";
  auto w = buildWorkload(provider(), c, {});
  ASSERT_TRUE(w.ok());
  // Named with the Provider's namespace: same-named Providers of two namespaces must not
  // share a ServiceAccount in the shared namespace.
  const std::string name = "banlieue-provider-file-team-a-lab";
  EXPECT_EQ(w->name, name);
  auto other = buildWorkload(provider("team-b"), c, {});
  EXPECT_NE(other->name, w->name);
  const auto* d = find(*w, "deployments", name);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->ns, "providers");
  // The GC ignores owners in another namespace: no reference; the finalizer cleans up.
  EXPECT_EQ(find(&d->body, "metadata.ownerReferences"), nullptr);
  EXPECT_EQ(find(*w, "serviceaccounts", name)->ns, "providers");
  EXPECT_EQ(find(*w, "roles", name)->ns, "team-a");
  const auto* rb = find(*w, "rolebindings", name);
  EXPECT_EQ(rb->ns, "team-a");
  EXPECT_EQ(stringOr(&(*find(&rb->body, "subjects"))[0], "namespace", ""), "providers");
}

// docs/adr/0043: the backend's role holds only its kinds; what every provider pod needs is
// banlieue-provider, bound beside it.
TEST(Workload, TheBackendsRoleAndTheSharedProviderRoleAreBothBound) {
  auto w = buildWorkload(provider(), managedClass(), {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::vector<std::string> roles;
  for (const auto& o : w->objects) {
    if (o.type.plural != "clusterrolebindings") continue;
    roles.push_back(stringOr(&o.body, "roleRef.name", ""));
    const auto* subjects = find(&o.body, "subjects");
    ASSERT_NE(subjects, nullptr);
    EXPECT_EQ(stringOr(&(*subjects)[0], "name", ""), "banlieue-provider-file-lab");
  }
  EXPECT_THAT(roles, ElementsAre("banlieue-provider-file", "banlieue-provider"));
}

TEST(Workload, ExternalGetsIdentityAndRbacOnly) {
  auto c = managedClass();
  c.spec.deployment = "External";
  c.spec.image.reset();
  c.spec.workload_namespace = "ignored";
  auto w = buildWorkload(provider(), c, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_TRUE(w->external);
  std::vector<std::string> kinds;
  for (const auto& o : w->objects) kinds.push_back(o.type.plural);
  EXPECT_THAT(kinds, ElementsAre("serviceaccounts", "roles", "rolebindings", "clusterrolebindings",
                                 "clusterrolebindings"));
  EXPECT_EQ(w->objects[0].ns, "team-a");
  bool token_rule = false;
  for (const auto& r : providerRoleRules(provider(), c, w->name)) {
    if (r.resources == std::vector<std::string>{"serviceaccounts/token"}) {
      token_rule = true;
      EXPECT_THAT(r.resource_names, ElementsAre(w->name));
    }
  }
  EXPECT_TRUE(token_rule);
}

TEST(Workload, AdditionalRulesComeLast) {
  auto c = managedClass();
  api::PolicyRule extra;
  extra.api_groups = {"batch"};
  extra.resources = {"jobs"};
  extra.verbs = {"get"};
  c.spec.additional_rules.push_back(extra);
  auto rules = providerRoleRules(provider(), c, "w");
  EXPECT_EQ(rules.back().resources, std::vector<std::string>{"jobs"});
}

TEST(Workload, ImageProblemsAreRefusedWithAReason) {
  auto c = managedClass();
  c.spec.image.reset();
  auto w = buildWorkload(provider(), c, {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().reason(), "InvalidImage");
  c = managedClass();
  c.spec.image->repository = " ";
  EXPECT_EQ(buildWorkload(provider(), c, {}).status().reason(), "InvalidImage");
  c = managedClass();
  c.spec.image->tag.clear();
  EXPECT_EQ(buildWorkload(provider(), c, {}).status().reason(), "InvalidImage");
  c.spec.image->digest = "sha256:abc";
  EXPECT_TRUE(buildWorkload(provider(), c, {}).ok());
  EXPECT_EQ(imageReference(*c.spec.image), "localhost/banlieue@sha256:abc");
  c.spec.image->tag = "1";
  EXPECT_EQ(imageReference(*c.spec.image), "localhost/banlieue:1@sha256:abc");
}

TEST(Workload, NamesThatCannotBeLabelValuesAreRefused) {
  auto w = buildWorkload(provider("team-a", std::string(64, 'x')), managedClass(), {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().reason(), "ProviderNameTooLong");
  EXPECT_THAT(w.status().message(), HasSubstr("63"));
}

TEST(Workload, ClassesWithLongNamesStillGiveValidNames) {
  auto c = managedClass();
  c.metadata.name = std::string(50, 'c');
  auto w = buildWorkload(provider("team-a", std::string(40, 'p')), c, {});
  ASSERT_TRUE(w.ok());
  for (const auto& o : w->objects) {
    if (o.name.size() > 63) {
      EXPECT_EQ(o.name.substr(o.name.size() - 7), "-import");
    }
    const auto* labels = find(&o.body, "metadata.labels");
    for (const auto& m : labels->GetObject()) EXPECT_LE(m.value.GetStringLength(), 63U);
  }
}

}  // namespace
}  // namespace banlieue::roles::provider_operator
