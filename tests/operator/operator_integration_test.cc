// `banlieue operator` against the real local control plane and its node: the workload it
// mints per Provider, class edits, pausing, External Providers and unusable classes (the
// fixture, operator_fixture.h, says how the operator runs).
#include "tests/operator/operator_fixture.h"

namespace banlieue::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST_F(OperatorTest, AProviderGetsItsWorkloadAndTheNodeRunsIt) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  ASSERT_EQ(cluster_.kubectl("create secret generic credentials --from-literal=token=t -n " + n)
                .exit_code,
            0);
  // The version whose image the node has: this pod must run.
  std::string cls = createClass("mint", imageTag());
  createProvider(n, "lab", cls);
  const std::string w = workloadOf(cls, "lab");
  std::set<std::string> want = {
      "ServiceAccount/" + n + "/" + w,
      "Role/" + n + "/" + w,
      "RoleBinding/" + n + "/" + w,
      "Role/" + n + "/" + w + "-import",
      "RoleBinding/" + n + "/" + w + "-import",
      // The runtime's import Jobs, in the build namespace only (ADR 0015).
      "RoleBinding/banlieue-imagebuild/" + crbOf(cls, n, "lab"),
      "ClusterRoleBinding//" + crbOf(cls, n, "lab"),
      "ClusterRoleBinding//" + roles::provider_operator::baseBindingName(crbOf(cls, n, "lab")),
      "Deployment/" + n + "/" + w,
  };
  EXPECT_TRUE(LocalCluster::eventually([&] { return labelled(n, "lab") == want; }, kMint))
      << ::testing::PrintToString(labelled(n, "lab"));
  EXPECT_EQ(get("provider lab -n " + n, "{.metadata.finalizers}"),
            "[\"banlieue.io/provider-workload\"]");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("provider lab -n " + n,
                   "{.status.workload.mode}/{.status.workload.deploymentName}/"
                   "{.status.workload.namespace}") == "Managed/" + w + "/" + n;
      },
      kMint));
  // The operator's field manager owns status.workload and no condition (1.20 does not
  // record the subresource in managedFields, so the fields themselves are checked).
  auto managed = cluster_.kubectl("get provider lab -n " + n + " --show-managed-fields -o json");
  ASSERT_EQ(managed.exit_code, 0) << managed.output;
  auto provider = json::parse(managed.output, "provider");
  std::string operator_fields;
  for (const auto& entry : json::find(&provider, "metadata.managedFields")->GetArray()) {
    if (json::stringOr(&entry, "manager", "") == "banlieue.io/operator") {
      operator_fields += json::serialize(entry["fieldsV1"]);
    }
  }
  EXPECT_THAT(operator_fields, HasSubstr("\"f:workload\""));
  EXPECT_THAT(operator_fields, ::testing::Not(HasSubstr("f:conditions")));

  // The contract with the provider runtime, and the pod the node runs from it.
  EXPECT_EQ(get("deployment " + w + " -n " + n, "{.spec.template.spec.containers[0].args}"),
            "[\"--log-level\",\"info\",\"--log-format\",\"text\",\"provider\",\"file\","
            "\"--provider\",\"" +
                n + "/lab\",\"--plugin-dir\",\"" + kImagePluginDir +
                "\","
                "\"--leader-election-id\",\"" +
                w + "\",\"--leader-election-namespace\",\"" + n +
                "\",\"--state-dir\",\"/var/lib/banlieue\",\"--metrics-bind-address\",\"127.0.0.1\","
                "\"--console-port\",\"8086\"]");
  EXPECT_EQ(get("deployment " + w + " -n " + n, "{.spec.template.spec.serviceAccountName}"), w);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        auto phase = get("pods -n " + n + " -l banlieue.io/provider=lab",
                         "{.items[0].spec.nodeName}/{.items[0].status.containerStatuses[0].name}");
        return phase.find("/provider") != std::string::npos && phase[0] != '/';
      },
      kMint))
      << cluster_.kubectl("get pods -o wide -n " + n).output << cluster_.nodeDiagnostics();
  // The minted pod is the real provider runtime: it loads the plugin, connects with the
  // Provider's credentials and reports the plugin's failure domains; the operator mirrors the
  // pod's readiness.
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("provider lab -n " + n,
                   "{.status.conditions[?(@.type==\"Ready\")].status}/"
                   "{.status.failureDomains[*].name}/{.status.workload.readyReplicas}") ==
               "True/local/1";
      },
      kMint))
      << cluster_.kubectl("get provider lab -n " + n + " -o yaml").output
      << cluster_.kubectl("get pods -o wide -n " + n).output << cluster_.nodeDiagnostics();
  EXPECT_EQ(get("deployment " + w + " -n " + n, "{.status.readyReplicas}"), "1");
  // It serves the plugin's machine kind: provisioned, then removed with its backend file.
  auto machine = cluster_.apply(R"(apiVersion: infrastructure.file.example.com/v1alpha1
kind: FileMachine
metadata: {name: vm1, namespace: )" +
                                n + R"(, labels: {banlieue.io/provider: lab}}
spec: {providerRef: {name: lab}, cpus: 1, memoryMiB: 128}
)");
  ASSERT_EQ(machine.exit_code, 0) << machine.output;
  auto ready = cluster_.kubectl("wait --for=condition=Ready --timeout=60s filemachine/vm1 -n " + n,
                                std::chrono::seconds(90));
  EXPECT_EQ(ready.exit_code, 0) << ready.output
                                << cluster_.kubectl("get filemachine vm1 -o yaml -n " + n).output;
  EXPECT_TRUE(inPod(n, w, "test -f " + std::string(kBackendDir) + "/" + n + "_vm1.json"));
  auto deleted =
      cluster_.kubectl("delete filemachine vm1 --timeout=60s -n " + n, std::chrono::seconds(90));
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  EXPECT_FALSE(inPod(n, w, "test -e " + std::string(kBackendDir) + "/" + n + "_vm1.json"));

  // ProviderClass status: one Provider, usable, the plugin's machine kind.
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + cls,
                   "{.status.providers}/{.status.conditions[?(@.type==\"Ready\")].status}/"
                   "{.status.machineKind.kind}/{.status.machineKind.apiVersion}") ==
               "1/True/FileMachine/infrastructure.file.example.com/v1alpha1";
      },
      kMint))
      << cluster_.kubectl("get providerclass " + cls + " -o yaml").output;
}

TEST_F(OperatorTest, TheProviderIdentityReadsItsOwnSecretAndNoOther) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  for (const char* secret : {"credentials", "someone-else"}) {
    ASSERT_EQ(cluster_
                  .kubectl(std::string("create secret generic ") + secret +
                           " --from-literal=username=u -n " + n)
                  .exit_code,
              0);
  }
  std::string cls = createClass("rbac");
  createProvider(n, "lab", cls);
  const std::string w = workloadOf(cls, "lab");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return exists("rolebinding " + w + " -n " + n) && exists("role " + w + " -n " + n); },
      kMint));
  // A real token of the provider's ServiceAccount against the apiserver's RBAC.
  auto token = cluster_.kubectl("create token " + w + " -n " + n);
  ASSERT_EQ(token.exit_code, 0) << token.output;
  auto kubeconfig = tokenKubeconfig(cluster_, token.output, work_ / ("provider-" + n));
  std::string as_provider =
      LocalCluster::kubectlBinary() + " --kubeconfig " + shellQuote(kubeconfig) + " -n " + n + " ";
  auto own = runCommand(as_provider + "get secret credentials -o jsonpath='{.data.username}'");
  EXPECT_EQ(own.exit_code, 0) << own.output;
  EXPECT_EQ(own.output, "dQ==");
  auto other = runCommand(as_provider + "get secret someone-else");
  EXPECT_NE(other.exit_code, 0);
  EXPECT_THAT(other.output, HasSubstr("Forbidden"));
  auto list = runCommand(as_provider + "get secrets");
  EXPECT_THAT(list.output, HasSubstr("Forbidden"));
  // Its own Lease, by name, and nothing else's.
  std::string sa = "--as=system:serviceaccount:" + n + ":" + w + " -n " + n;
  EXPECT_EQ(cluster_.kubectl("auth can-i update lease/" + w + " " + sa).output, "yes\n");
  EXPECT_NE(cluster_.kubectl("auth can-i update lease/banlieue-operator " + sa).output, "yes\n");
  // The shared backend ClusterRole, through the minted ClusterRoleBinding.
  EXPECT_THAT(
      cluster_.kubectl("auth can-i list filemachines.infrastructure.file.example.com " + sa).output,
      HasSubstr("yes"));
  // banlieue-provider, through the second one: what it loaded, on its class (ADR 0043).
  EXPECT_THAT(cluster_
                  .kubectl("auth can-i patch providerclasses.banlieue.io "
                           "--subresource=status " +
                           sa)
                  .output,
              HasSubstr("yes"));
  fs::remove(kubeconfig);

  // A Provider without credentials gets no Secret access at all.
  createProvider(n, "anon", cls, "", "");
  const std::string anon = workloadOf(cls, "anon");
  ASSERT_TRUE(LocalCluster::eventually([&] { return exists("role " + anon + " -n " + n); }, kMint));
  EXPECT_THAT(get("role " + anon + " -n " + n, "{.rules[*].resources}"),
              ::testing::Not(HasSubstr("secrets")));
  EXPECT_NE(cluster_
                .kubectl("auth can-i get secret/credentials --as=system:serviceaccount:" + n + ":" +
                         anon + " -n " + n)
                .output,
            "yes\n");
}

// In a namespace where userData is enabled (bootstrap's RoleBinding for the controller there),
// the provider reads Secrets by any name, for its machines' rendered userData (docs/adr/0026),
// and still cannot list them.
TEST_F(OperatorTest, InAUserDataNamespaceTheProviderReadsSecretsByNameButCannotList) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  ASSERT_EQ(cluster_
                .kubectl("create rolebinding banlieue-controller-userdata --clusterrole=view "
                         "--serviceaccount=banlieue-system:banlieue-controller -n " +
                         n)
                .exit_code,
            0);
  std::string cls = createClass("userdata");
  createProvider(n, "lab", cls);
  const std::string w = workloadOf(cls, "lab");
  const std::string sa = "--as=system:serviceaccount:" + n + ":" + w + " -n " + n;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return cluster_.kubectl("auth can-i get secret/web-rendered-userdata " + sa).output ==
               "yes\n";
      },
      kMint))
      << get("role " + w + " -n " + n, "{.rules}");
  EXPECT_NE(cluster_.kubectl("auth can-i list secrets " + sa).output, "yes\n");
  EXPECT_NE(cluster_.kubectl("auth can-i watch secrets " + sa).output, "yes\n");
}

TEST_F(OperatorTest, AClassEditRollsEveryProviderOfTheClassAtOnce) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  // The operator of this suite never resyncs within a test (kResync), so the rollout below can
  // only come from the class edit reaching every Provider of the class.
  std::string cls =
      createClass("roll", "1.0.0", "  nodeSelector: {banlieue.io/operator-test: nowhere}\n");
  createProvider(n, "one", cls);
  createProvider(n, "two", cls);
  auto images = [&] {
    return get("deployment " + workloadOf(cls, "one") + " -n " + n,
               "{.spec.template.spec.containers[0].image}") +
           "," +
           get("deployment " + workloadOf(cls, "two") + " -n " + n,
               "{.spec.template.spec.containers[0].image}");
  };
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        return images() ==
               "localhost/banlieue-provider-file:1.0.0,localhost/banlieue-provider-file:1.0.0";
      },
      kMint))
      << images();
  EXPECT_EQ(get("deployment " + workloadOf(cls, "one") + " -n " + n,
                "{.spec.template.spec.nodeSelector}"),
            "{\"banlieue.io/operator-test\":\"nowhere\"}");
  ASSERT_EQ(cluster_
                .kubectl("patch providerclass " + cls +
                         " --type=merge -p '{\"spec\":{\"image\":{\"tag\":\"2.0.0\"},"
                         "\"logging\":{\"level\":\"debug\"}}}'")
                .exit_code,
            0);
  static_assert(kMint < kResync);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return images() ==
               "localhost/banlieue-provider-file:2.0.0,localhost/banlieue-provider-file:2.0.0";
      },
      kMint))
      << images();
  EXPECT_THAT(get("deployment " + workloadOf(cls, "two") + " -n " + n,
                  "{.spec.template.spec.containers[0].args}"),
              HasSubstr("\"--log-level\",\"debug\""));
  EXPECT_EQ(get("providerclass " + cls, "{.status.providers}"), "2");
}

TEST_F(OperatorTest, MovingAProviderToAnotherClassLeavesNothingOfTheOldWorkload) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string old_cls = createClass("old");
  std::string new_cls = createClass("new");
  createProvider(n, "lab", old_cls);
  const std::string old_crb = "clusterrolebinding/" + crbOf(old_cls, n, "lab");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        return exists(old_crb) && exists("deployment " + workloadOf(old_cls, "lab") + " -n " + n);
      },
      kMint));
  ASSERT_EQ(cluster_
                .kubectl("patch provider lab -n " + n +
                         " --type=merge -p '{\"spec\":{\"providerClassRef\":{\"name\":\"" +
                         new_cls + "\"}}}'")
                .exit_code,
            0);
  const std::string w = workloadOf(new_cls, "lab");
  std::set<std::string> want = {
      "ServiceAccount/" + n + "/" + w,
      "Role/" + n + "/" + w,
      "RoleBinding/" + n + "/" + w,
      "Role/" + n + "/" + w + "-import",
      "RoleBinding/" + n + "/" + w + "-import",
      "RoleBinding/banlieue-imagebuild/" + crbOf(new_cls, n, "lab"),
      "ClusterRoleBinding//" + crbOf(new_cls, n, "lab"),
      "ClusterRoleBinding//" + roles::provider_operator::baseBindingName(crbOf(new_cls, n, "lab")),
      "Deployment/" + n + "/" + w,
  };
  EXPECT_TRUE(LocalCluster::eventually([&] { return labelled(n, "lab") == want; }, kMint))
      << ::testing::PrintToString(labelled(n, "lab"));
  EXPECT_FALSE(exists(old_crb));
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + old_cls, "{.status.providers}") == "0" &&
               get("providerclass " + new_cls, "{.status.providers}") == "1";
      },
      kMint));
}

TEST_F(OperatorTest, DeletingTheProviderRemovesEverything) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string cls = createClass("delete");
  createProvider(n, "lab", cls);
  ASSERT_TRUE(LocalCluster::eventually([&] { return labelled(n, "lab").size() == 9; }, kMint));
  auto r = cluster_.kubectl("delete provider lab --timeout=60s -n " + n);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(LocalCluster::eventually([&] { return labelled(n, "lab").empty(); }, kMint))
      << ::testing::PrintToString(labelled(n, "lab"));
  EXPECT_FALSE(exists("clusterrolebinding " + crbOf(cls, n, "lab")));
}

TEST_F(OperatorTest, PausedProvidersAndClassesAreLeftAlone) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string cls = createClass("pause");
  createProvider(n, "lab", cls, "  paused: true\n");
  const std::string w = workloadOf(cls, "lab");
  auto paused_event = [&](const std::string& needle) {
    auto r = cluster_.kubectl("get events -n " + n +
                              " --field-selector reason=Paused -o jsonpath='{.items[*].message}'");
    return r.output.find(needle) != std::string::npos;
  };
  ASSERT_TRUE(LocalCluster::eventually([&] { return paused_event("Provider is paused"); }, kMint));
  EXPECT_TRUE(labelled(n, "lab").empty());

  cluster_.kubectl("patch provider lab -n " + n +
                   " --type=merge -p '{\"spec\":{\"paused\":false}}'");
  ASSERT_TRUE(
      LocalCluster::eventually([&] { return exists("deployment " + w + " -n " + n); }, kMint));

  // A paused class: the edit is not rolled out, and the class says why.
  cluster_.kubectl("patch providerclass " + cls +
                   " --type=merge -p '{\"spec\":{\"paused\":true}}'");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + cls, "{.status.conditions[?(@.type==\"Paused\")].status}") ==
               "True";
      },
      kMint));
  cluster_.kubectl("patch providerclass " + cls +
                   " --type=merge -p '{\"spec\":{\"image\":{\"tag\":\"9.9.9\"}}}'");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return paused_event("ProviderClass " + cls + " is paused"); }, kMint));
  EXPECT_EQ(get("deployment " + w + " -n " + n, "{.spec.template.spec.containers[0].image}"),
            "localhost/banlieue-provider-file:1.0.0");
  cluster_.kubectl("patch providerclass " + cls +
                   " --type=merge -p '{\"spec\":{\"paused\":false}}'");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("deployment " + w + " -n " + n, "{.spec.template.spec.containers[0].image}") ==
               "localhost/banlieue-provider-file:9.9.9";
      },
      kMint));
}

TEST_F(OperatorTest, ExternalProvidersGetIdentityAndRbacOnly) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string cls = createClass("external", "", "  deployment: External\n");
  createProvider(n, "host", cls);
  const std::string w = workloadOf(cls, "host");
  std::set<std::string> want = {
      "ServiceAccount/" + n + "/" + w,
      "Role/" + n + "/" + w,
      "RoleBinding/" + n + "/" + w,
      "ClusterRoleBinding//" + crbOf(cls, n, "host"),
      "ClusterRoleBinding//" + roles::provider_operator::baseBindingName(crbOf(cls, n, "host")),
  };
  EXPECT_TRUE(LocalCluster::eventually([&] { return labelled(n, "host") == want; }, kMint))
      << ::testing::PrintToString(labelled(n, "host"));
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("provider host -n " + n,
                   "{.status.workload.mode}/{.status.workload.namespace}") == "External/" + n;
      },
      kMint));
  // The host-resident process mints its own tokens and writes its Provider's status.
  std::string sa = "--as=system:serviceaccount:" + n + ":" + w + " -n " + n;
  EXPECT_EQ(
      cluster_.kubectl("auth can-i create serviceaccounts/" + w + " --subresource=token " + sa)
          .output,
      "yes\n");
  EXPECT_EQ(
      cluster_.kubectl("auth can-i patch providers.banlieue.io/host --subresource=status " + sa)
          .output,
      "yes\n");
  EXPECT_EQ(cluster_.kubectl("auth can-i get secret/credentials " + sa).output, "yes\n");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + cls, "{.status.conditions[?(@.type==\"Ready\")].status}") ==
               "True";
      },
      kMint));
}

TEST_F(OperatorTest, AnUnusableClassSaysWhyAndMintsNoDeployment) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string cls = createClass("bad", "1.0.0");
  cluster_.kubectl("patch providerclass " + cls +
                   " --type=merge -p '{\"spec\":{\"plugin\":{\"path\":\"/etc/passwd\"}}}'");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + cls, "{.status.conditions[?(@.type==\"Ready\")].reason}") ==
               "PluginPathEscapes";
      },
      kMint));
  cluster_.kubectl("patch providerclass " + cls +
                   " --type=json -p '[{\"op\":\"remove\",\"path\":"
                   "\"/spec/image\"}]'");
  createProvider(n, "lab", cls);
  auto warning = [&] {
    return cluster_
        .kubectl("get events -n " + n +
                 " --field-selector reason=InvalidImage -o jsonpath='{.items[*].message}'")
        .output;
  };
  EXPECT_TRUE(LocalCluster::eventually([&] { return !warning().empty(); }, kMint));
  EXPECT_FALSE(exists("deployment " + workloadOf(cls, "lab") + " -n " + n));
}

}  // namespace
}  // namespace banlieue::testing
