// Machines Cluster API makes from banlieue's templates (issue #24, docs/adr/0050), against the
// real apiserver with Cluster API core's v1beta2 CRDs installed (tests/integration/testdata).
// The test plays Cluster API core: it makes the Cluster, the Machine stamped with a failure
// domain, the bootstrap data Secret, and the infrastructure machine copied from a template
// with core's owner reference and label. The controller under test picks the Provider, fills
// the place and names the bootstrap data, or says on the object why it waits.
#include "host/kube/api_error.h"
#include "tests/integration/controller_vm_fixture.h"

#include <gmock/gmock.h>

namespace banlieue::controller {
namespace {

using ::testing::HasSubstr;

const kube::ResourceType kVSphereMachine{"infrastructure.banlieue.io", "v1beta2", "vspheremachines",
                                         true};
const kube::ResourceType kCapiMachine{"cluster.x-k8s.io", "v1beta2", "machines", true};

class CapiAdoptionTest : public ControllerVmTest {
 protected:
  // Before the fixture's controller starts: it looks for Cluster API's kinds once.
  static void SetUpTestSuite() {
    auto installed = LocalCluster::shared().installClusterApiCrds();
    ASSERT_EQ(installed.exit_code, 0) << installed.output;
  }

  void SetUp() override {
    ControllerVmTest::SetUp();
    ASSERT_NE(manager_->capiAdoption(), nullptr) << "Cluster API's kinds were not discovered";
    providerClass(prefix_ + "-vs", "VSphereMachine");
    provider("vc1", prefix_ + "-vs", "{env: prod}", R"({"datacenter":"DC0","cluster":"C1"})");
    provider("vc2", prefix_ + "-vs", "{env: prod}", R"({"datacenter":"DC0","cluster":"C2"})");
    apply(
        "apiVersion: infrastructure.banlieue.io/v1beta2\nkind: VSphereCluster\nmetadata:\n  "
        "name: prod\nspec:\n  providerSelector: {matchLabels: {env: prod}}\n---\n"
        "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: c1\nspec:\n"
        "  infrastructureRef: {apiGroup: infrastructure.banlieue.io, kind: VSphereCluster, "
        "name: prod}\n");
  }

  // Cluster API core's Machine `name` in `failure_domain`, naming `secret` (empty: not yet).
  void machine(const std::string& name, const std::string& failure_domain,
               const std::string& secret = "") {
    apply("apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata:\n  name: " + name +
          "\n  labels: {cluster.x-k8s.io/cluster-name: c1}\nspec:\n  clusterName: c1\n"
          "  bootstrap: {" +
          (secret.empty() ? "" : "dataSecretName: " + secret) +
          "}\n  infrastructureRef: {apiGroup: infrastructure.banlieue.io, kind: VSphereMachine, "
          "name: " +
          name + "}\n" +
          (failure_domain.empty() ? "" : "  failureDomain: " + failure_domain + "\n"));
  }

  // What a bootstrap provider makes: Cluster API's type, labelled with the cluster.
  void bootstrapSecret(const std::string& name,
                       const std::string& type = "cluster.x-k8s.io/secret") {
    apply("apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name +
          "\n  labels: {cluster.x-k8s.io/cluster-name: c1}\ntype: " + type +
          "\nstringData:\n  value: \"#cloud-config\\nhostname: " + name +
          "\\n\"\n  format: cloud-config\n");
  }

  // Core's copy of the template's spec: no place, no Provider; owned by Machine `name`.
  void infraMachine(const std::string& name, const std::string& extra_metadata = "") {
    auto owner = get(kCapiMachine, name);
    ASSERT_NE(owner, nullptr);
    apply(
        "apiVersion: infrastructure.banlieue.io/v1beta2\nkind: VSphereMachine\nmetadata:\n"
        "  name: " +
        name + "\n  labels: {cluster.x-k8s.io/cluster-name: c1}\n" + extra_metadata +
        "  ownerReferences:\n  - {apiVersion: cluster.x-k8s.io/v1beta2, kind: Machine, name: " +
        name + ", uid: " + json::stringOr(owner.get(), "metadata.uid") +
        ", controller: true, blockOwnerDeletion: true}\nspec:\n  template: ubuntu\n"
        "  numCpus: 2\n  memoryMiB: 2048\n  firmware: efi\n"
        "  disks: [{name: os, sizeGiB: 20}]\n  network: [{name: eth0, portGroup: VM Network}]\n");
  }

  std::string machineCondition(const std::string& name, const std::string& type,
                               const char* field = "reason") {
    auto object = get(kVSphereMachine, name);
    const auto* list = object ? json::find(object.get(), "status.conditions") : nullptr;
    if (list == nullptr || !list->IsArray()) return "<none>";
    for (const auto& c : list->GetArray()) {
      if (json::stringOr(&c, "type") == type) return json::stringOr(&c, field);
    }
    return "<none>";
  }

  std::string field(const std::string& name, const std::string& path) {
    auto object = get(kVSphereMachine, name);
    return object ? json::stringOr(object.get(), path) : "<absent>";
  }
};

TEST_F(CapiAdoptionTest, AMachineWaitsForItsBootstrapDataThenGoesToItsFailureDomainsProvider) {
  machine("c1-md-0-a", "fd-vc2");
  infraMachine("c1-md-0-a");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return machineCondition("c1-md-0-a", "Ready") == "WaitingForBootstrapData";
  })) << machineCondition("c1-md-0-a", "Ready", "message");
  EXPECT_EQ(field("c1-md-0-a", "spec.providerRef.name"), "") << "adopted before its data existed";

  // The bootstrap provider's Secret, then core names it on the Machine.
  bootstrapSecret("c1-md-0-a-bootstrap");
  machine("c1-md-0-a", "fd-vc2", "c1-md-0-a-bootstrap");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return field("c1-md-0-a", "spec.providerRef.name") == "vc2";
  })) << machineCondition("c1-md-0-a", "Ready", "message");
  auto adopted = get(kVSphereMachine, "c1-md-0-a");
  ASSERT_NE(adopted, nullptr);
  EXPECT_EQ(runtime::label(*adopted, "banlieue.io/provider"), "vc2");
  EXPECT_EQ(json::stringOr(adopted.get(), "spec.failureDomain"), "fd-vc2");
  // The place of fd-vc2, and the datastore from its first storage class.
  EXPECT_EQ(json::stringOr(adopted.get(), "spec.datacenter"), "DC0");
  EXPECT_EQ(json::stringOr(adopted.get(), "spec.cluster"), "C2");
  EXPECT_EQ(json::stringOr(adopted.get(), "spec.datastore"), "fast");
  // The template's own fields are untouched.
  EXPECT_EQ(json::stringOr(adopted.get(), "spec.template"), "ubuntu");
  // The bootstrap data by reference, never its text.
  auto secret = client_->get(kube::resources::kSecret, ns_.name(), "c1-md-0-a-bootstrap");
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ(runtime::annotation(*adopted, "banlieue.io/user-data-secret"), "c1-md-0-a-bootstrap");
  EXPECT_EQ(runtime::annotation(*adopted, "banlieue.io/user-data-revision"),
            json::stringOr(&*secret, "metadata.resourceVersion"));
  EXPECT_EQ(runtime::annotation(*adopted, "banlieue.io/user-data-key"), "value");
  EXPECT_THAT(json::serialize(*adopted), ::testing::Not(HasSubstr("hostname:")));
  // What a user sees.
  auto described = cluster_.kubectl("get events -n " + ns_.name() +
                                    " --field-selector involvedObject.name=c1-md-0-a");
  EXPECT_THAT(described.output, HasSubstr("Adopted")) << described.output;
}

TEST_F(CapiAdoptionTest, AnUnknownFailureDomainOrAnotherSecretTypeIsSaidOnTheObject) {
  bootstrapSecret("c1-md-0-b-bootstrap");
  machine("c1-md-0-b", "fd-elsewhere", "c1-md-0-b-bootstrap");
  infraMachine("c1-md-0-b");
  bootstrapSecret("c1-md-0-c-data", "Opaque");
  machine("c1-md-0-c", "fd-vc1", "c1-md-0-c-data");
  infraMachine("c1-md-0-c");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return machineCondition("c1-md-0-b", "Ready") == "FailureDomainUnknown" &&
           machineCondition("c1-md-0-c", "Ready") == "UserDataNotAllowed";
  })) << machineCondition("c1-md-0-b", "Ready")
      << " " << machineCondition("c1-md-0-c", "Ready");
  // The message lists what the cluster offers.
  EXPECT_THAT(machineCondition("c1-md-0-b", "Ready", "message"), HasSubstr("fd-vc1, fd-vc2"));
  EXPECT_EQ(field("c1-md-0-b", "spec.providerRef.name"), "");
  EXPECT_EQ(field("c1-md-0-c", "spec.providerRef.name"), "");

  // The failure domain appearing (a Provider joining the cluster's selection) unblocks it.
  provider("elsewhere", prefix_ + "-vs", "{env: prod}", R"({"datacenter":"DC1","cluster":"C9"})");
  machine("c1-md-0-b", "fd-elsewhere", "c1-md-0-b-bootstrap");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return field("c1-md-0-b", "spec.providerRef.name") == "elsewhere";
  })) << machineCondition("c1-md-0-b", "Ready", "message");
  EXPECT_EQ(field("c1-md-0-b", "spec.datacenter"), "DC1");
}

TEST_F(CapiAdoptionTest, APausedMachineIsLeftAloneUntilTheAnnotationGoes) {
  bootstrapSecret("c1-md-0-d-bootstrap");
  machine("c1-md-0-d", "fd-vc1", "c1-md-0-d-bootstrap");
  infraMachine("c1-md-0-d", "  annotations: {cluster.x-k8s.io/paused: \"\"}\n");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return machineCondition("c1-md-0-d", "Paused", "status") == "True"; }));
  EXPECT_EQ(machineCondition("c1-md-0-d", "Ready"), "Paused");
  EXPECT_EQ(field("c1-md-0-d", "spec.providerRef.name"), "");
  ASSERT_EQ(
      cluster_
          .kubectl("annotate vspheremachine c1-md-0-d cluster.x-k8s.io/paused- -n " + ns_.name())
          .exit_code,
      0);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return field("c1-md-0-d", "spec.providerRef.name") == "vc1"; }));
  EXPECT_EQ(field("c1-md-0-d", "spec.cluster"), "C1");
}

// Outside the namespaces bootstrap granted userData, the controller may not read Secrets (as
// the deployed controller's RBAC leaves it): the machine says so and how to grant it, and no
// Provider gets it.
TEST_F(CapiAdoptionTest, WithoutTheRightToReadTheSecretTheMachineSaysHowToGrantIt) {
  counting_->deny("secrets");
  bootstrapSecret("c1-md-0-e-bootstrap");
  machine("c1-md-0-e", "fd-vc1", "c1-md-0-e-bootstrap");
  infraMachine("c1-md-0-e");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return machineCondition("c1-md-0-e", "Ready") == "UserDataNotAllowed";
  })) << machineCondition("c1-md-0-e", "Ready", "message");
  EXPECT_THAT(machineCondition("c1-md-0-e", "Ready", "message"),
              HasSubstr("--userdata-namespace " + ns_.name()));
  EXPECT_EQ(field("c1-md-0-e", "spec.providerRef.name"), "");
}

// RBAC older than the binary (no read on Cluster API's Machines): adoption stays off, said in the
// log, and the rest of the controller still syncs and runs.
TEST_F(CapiAdoptionTest, WithoutTheRightToListMachinesTheRestOfTheControllerStillRuns) {
  counting_->deny("machines");
  restartController();  // asserts that it syncs
  EXPECT_EQ(manager_->capiAdoption(), nullptr);
}

}  // namespace
}  // namespace banlieue::controller
