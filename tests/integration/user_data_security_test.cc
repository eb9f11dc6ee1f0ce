// userData never leaves Secrets (docs/adr/0026, issue #25 item 1), against the real apiserver
// with two service accounts of the test's namespace:
//  - `consumer` may create VirtualMachines and read them and the infrastructure objects, as a
//    VM consumer would, and may not read Secrets;
//  - `provider` holds what the operator grants a provider workload (Secrets by name, no list).
// The consumer names a Secret that did not opt in and gets UserDataNotAllowed with nothing made
// of it; names an opted-in one and still cannot read its text anywhere: not in the
// infrastructure object, not in the rendered Secret. The provider account reads the rendered
// Secret, and the provider runtime's resolution hands exactly that text to the plugin.
#include "host/common/base64.h"
#include "host/roles/provider/user_data_resolution.h"
#include "tests/integration/controller_vm_fixture.h"

#include <gmock/gmock.h>

namespace banlieue::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kCredentials = "provider-password-7f3a";
constexpr const char* kBootSecret = "boot-token-91c2";

class UserDataSecurityTest : public ControllerVmTest {
 protected:
  void SetUp() override {
    ControllerVmTest::SetUp();
    if (HasFatalFailure()) return;
    const std::string ns = ns_.name();
    apply(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: consumer}\n---\n"
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: provider}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: consumer}\n"
        "rules:\n"
        "- apiGroups: [banlieue.io]\n  resources: [virtualmachines]\n"
        "  verbs: [create, get, list, watch, patch, update]\n"
        "- apiGroups: [infrastructure.banlieue.io]\n  resources: [libvirtmachines]\n"
        "  verbs: [get, list, watch]\n"
        "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n"
        "metadata: {name: consumer}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: consumer}\n"
        "subjects: [{kind: ServiceAccount, name: consumer, namespace: " +
        ns +
        "}]\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: provider}\n"
        "rules:\n- apiGroups: ['']\n  resources: [secrets]\n  verbs: [get]\n"
        "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n"
        "metadata: {name: provider}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: provider}\n"
        "subjects: [{kind: ServiceAccount, name: provider, namespace: " +
        ns + "}]\n");
    // A Provider's credentials (never meant for a VM) and a Secret made to be userData.
    apply(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: credentials}\nstringData:\n"
        "  user-data: \"#cloud-config\\npassword: " +
        std::string(kCredentials) +
        "\\n\"\n---\n"
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: boot\n"
        "  labels: {banlieue.io/user-data: \"true\"}\nstringData:\n"
        "  user-data: \"#cloud-config\\nhostname: ${VM_NAME}\\ntoken: " +
        std::string(kBootSecret) + "\\n\"\n");
    providerClass(prefix_ + "-lv", "LibvirtMachine");
    provider("p1", prefix_ + "-lv", "{site: one}");
    vmClass(prefix_ + "-small");
    image(prefix_ + "-img", {{"p1", "/images/debian.qcow2"}});
  }

  std::string as(const std::string& account) const {
    return " --as=system:serviceaccount:" + ns_.name() + ":" + account + " -n " + ns_.name();
  }

  // The consumer's own VM, applied with the consumer's identity.
  testing::CommandResult consumerVm(const std::string& name, const std::string& secret) {
    return cluster_.apply(
        "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n"
        "  name: " +
            name + "\n  namespace: " + ns_.name() + "\nspec:\n  classRef: {name: " + prefix_ +
            "-small}\n  imageRef: {name: " + prefix_ +
            "-img}\n  userData: {secretRef: {name: " + secret + "}}\n",
        as("consumer"));
  }

  // Everything the consumer can read of its VMs and machines, as YAML.
  std::string consumerView() {
    return cluster_.kubectl("get virtualmachines,libvirtmachines -o yaml" + as("consumer")).output;
  }
};

TEST_F(UserDataSecurityTest, ASecretThatDidNotOptInIsRefusedAndNothingIsMadeOfIt) {
  ASSERT_EQ(cluster_.kubectl("get secret credentials" + as("consumer")).exit_code, 1)
      << "the consumer must not read Secrets for this test to mean anything";
  auto applied = consumerVm("thief", "credentials");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return condition("thief", "Ready", "reason") == "UserDataNotAllowed";
  })) << condition("thief", "Ready", "message");
  EXPECT_THAT(condition("thief", "Ready", "message"), HasSubstr("banlieue.io/user-data=true"));
  EXPECT_EQ(get(kLibvirtMachine, "thief"), nullptr);
  EXPECT_EQ(cluster_.kubectl("get secret thief-rendered-userdata -n " + ns_.name()).exit_code, 1);
  EXPECT_THAT(consumerView(), Not(HasSubstr(kCredentials)));
}

TEST_F(UserDataSecurityTest, AnOptedInSecretReachesTheProviderButNeverTheConsumer) {
  auto applied = consumerVm("web", "boot");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kLibvirtMachine, "web") != nullptr; }))
      << condition("web", "Ready", "message");
  // Nothing the consumer reads holds the text, rendered or not.
  const std::string view = consumerView();
  EXPECT_THAT(view, HasSubstr("banlieue.io/user-data-secret: web-rendered-userdata"));
  EXPECT_THAT(view, Not(HasSubstr(kBootSecret)));
  EXPECT_THAT(view, Not(HasSubstr("hostname: web")));
  auto denied = cluster_.kubectl("get secret web-rendered-userdata" + as("consumer"));
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_THAT(denied.output, HasSubstr("forbidden"));

  // The provider's account reads it by name (and cannot list Secrets).
  auto read = cluster_.kubectl("get secret web-rendered-userdata -o jsonpath='{.data.userData}'" +
                               as("provider"));
  ASSERT_EQ(read.exit_code, 0) << read.output;
  EXPECT_EQ(common::decodeBase64(read.output),
            "#cloud-config\nhostname: web\ntoken: " + std::string(kBootSecret) + "\n");
  EXPECT_EQ(cluster_.kubectl("get secrets" + as("provider")).exit_code, 1);
  // What the provider runtime hands the plugin for this object.
  auto machine = get(kLibvirtMachine, "web");
  auto resolved = roles::provider::resolveUserData(*client_, *machine);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  ASSERT_TRUE(resolved->has_value());
  EXPECT_EQ((*resolved)->text,
            "#cloud-config\nhostname: web\ntoken: " + std::string(kBootSecret) + "\n");

  // The consumer points its VM at the Provider's credentials instead: refused, and the machine
  // keeps referring to the rendered boot data only.
  ASSERT_EQ(consumerVm("web", "credentials").exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return condition("web", "Ready", "reason") == "UserDataNotAllowed"; }));
  auto rendered = client_->get(kube::resources::kSecret, ns_.name(), "web-rendered-userdata");
  ASSERT_TRUE(rendered.ok());
  EXPECT_THAT(*common::decodeBase64(json::stringOr(&*rendered, "data.userData")),
              Not(HasSubstr(kCredentials)));
  EXPECT_THAT(consumerView(), Not(HasSubstr(kCredentials)));
}

}  // namespace
}  // namespace banlieue::controller
