// userData source validation, extraction from Secrets and ConfigMaps, and placeholder rendering.
#include "host/roles/controller/user_data.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(UserDataRefTest, AbsentSourceMeansNoUserData) {
  api::VirtualMachineSpec spec;
  auto ref = userDataRef(spec);
  ASSERT_TRUE(ref.ok());
  EXPECT_FALSE(ref->has_value());
}

TEST(UserDataRefTest, ExactlyOneSourceWithDefaultKey) {
  api::VirtualMachineSpec spec;
  spec.user_data = api::UserDataSource{};
  auto none = userDataRef(spec);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().reason(), "InvalidUserData");
  EXPECT_EQ(none.status().message(),
            "userData: exactly one of secretRef, configMapRef must be set (none were)");

  spec.user_data->secret_ref = api::KeySelector{.name = "s"};
  spec.user_data->config_map_ref = api::KeySelector{.name = "c"};
  auto both = userDataRef(spec);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message(),
            "userData: exactly one of secretRef, configMapRef must be set (more than one was)");

  spec.user_data->config_map_ref.reset();
  auto secret = userDataRef(spec);
  ASSERT_TRUE(secret.ok());
  ASSERT_TRUE(secret->has_value());
  EXPECT_TRUE((*secret)->secret);
  EXPECT_EQ((*secret)->name, "s");
  EXPECT_EQ((*secret)->key, "user-data");

  spec.user_data->secret_ref.reset();
  spec.user_data->config_map_ref = api::KeySelector{.name = "c", .key = "cloud.yaml"};
  auto config_map = userDataRef(spec);
  ASSERT_TRUE(config_map.ok());
  EXPECT_FALSE((*config_map)->secret);
  EXPECT_EQ((*config_map)->key, "cloud.yaml");
  EXPECT_EQ((*config_map)->field(), "VirtualMachine.spec.userData.configMapRef");

  spec.user_data->config_map_ref->name.clear();
  EXPECT_FALSE(userDataRef(spec).ok());
}

TEST(ExtractUserDataTest, SecretDataIsBase64DecodedAndMustBeUtf8) {
  UserDataRef ref{.secret = true, .name = "seed", .key = "user-data"};
  // "#cloud-config\nhostname: ${VM_NAME}\n"
  auto secret = sdk::json::parse(
      R"({"data":{"user-data":"I2Nsb3VkLWNvbmZpZwpob3N0bmFtZTogJHtWTV9OQU1FfQo=","bin":"/w==","bad":"***"}})",
      "secret");
  auto text = extractUserData(secret, ref);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "#cloud-config\nhostname: ${VM_NAME}\n");

  ref.key = "bin";  // 0xff
  auto binary = extractUserData(secret, ref);
  ASSERT_FALSE(binary.ok());
  EXPECT_EQ(binary.status().message(), "Secret seed data[bin] is not UTF-8 text");

  ref.key = "bad";
  EXPECT_EQ(extractUserData(secret, ref).status().message(), "Secret seed data[bad] is not base64");

  ref.key = "missing";
  auto missing = extractUserData(secret, ref);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "Secret seed has no data[missing] (VirtualMachine.spec.userData.secretRef)");
}

TEST(ExtractUserDataTest, ConfigMapDataIsPlainText) {
  UserDataRef ref{.secret = false, .name = "seed", .key = "user-data"};
  auto config_map = sdk::json::parse(R"({"data":{"user-data":"plain ${IP}"}})", "cm");
  auto text = extractUserData(config_map, ref);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "plain ${IP}");
  auto empty = sdk::json::parse(R"({"metadata":{"name":"seed"}})", "cm");
  EXPECT_EQ(extractUserData(empty, ref).status().message(),
            "ConfigMap seed has no data[user-data] (VirtualMachine.spec.userData.configMapRef)");
}

TEST(ExtractUserDataTest, ErrorsNeverCarryTheContent) {
  UserDataRef ref{.secret = true, .name = "seed", .key = "user-data"};
  auto secret = sdk::json::parse(R"({"data":{"user-data":"c2VjcmV0LXBhc3N3b3Jk/w=="}})", "s");
  auto result = extractUserData(secret, ref);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), Not(HasSubstr("secret-password")));
  EXPECT_THAT(result.status().message(), Not(HasSubstr("c2VjcmV0")));
}

api::VirtualMachine vmNamed(const std::string& name) {
  api::VirtualMachine vm;
  vm.metadata.name = name;
  return vm;
}

TEST(RenderUserDataTest, EveryPlaceholderFromTheFirstOverride) {
  auto vm = vmNamed("web-1");
  vm.spec.network_overrides = {
      {.name = "eth1",
       .static_ = {.address = "10.0.0.5",
                   .prefix = 24,
                   .gateway = "10.0.0.1",
                   .nameservers = {"1.1.1.1", "9.9.9.9"},
                   .domain = "lab.example"}},
      {.name = "eth0", .static_ = {.address = "192.168.0.9", .prefix = 16}}};
  EXPECT_EQ(renderUserData("${VM_NAME}|${FQDN}|${IP}/${PREFIX}|${GATEWAY}|${DNS}|${DOMAIN}", vm),
            "web-1|web-1.lab.example|10.0.0.5/24|10.0.0.1|1.1.1.1,9.9.9.9|lab.example");
}

TEST(RenderUserDataTest, WithoutOverridesNetworkValuesAreEmptyAndFqdnIsTheName) {
  auto vm = vmNamed("web-1");
  EXPECT_EQ(renderUserData("h=${FQDN} ip=${IP} p=${PREFIX} d=${DOMAIN}", vm), "h=web-1 ip= p= d=");
}

TEST(RenderUserDataTest, FqdnKeepsANameAlreadyQualified) {
  auto vm = vmNamed("web-1.LAB.example");
  vm.spec.network_overrides = {{.name = "eth0", .static_ = {.domain = "lab.example"}}};
  EXPECT_EQ(renderUserData("${FQDN}", vm), "web-1.LAB.example");
}

TEST(RenderUserDataTest, UnknownPlaceholdersAndShellSyntaxAreLeftAlone) {
  auto vm = vmNamed("db");
  EXPECT_EQ(renderUserData("${HOME} $VM_NAME ${VM_NAME ${VM_NAME}} ${", vm),
            "${HOME} $VM_NAME ${VM_NAME ${VM_NAME}} ${");
  EXPECT_EQ(renderUserData("a${VM_NAME}b${VM_NAME}", vm), "adbbdb");
}

TEST(RenderUserDataTest, ValuesAreNotRescanned) {
  auto vm = vmNamed("x");
  vm.spec.network_overrides = {{.name = "eth0", .static_ = {.domain = "${VM_NAME}"}}};
  EXPECT_EQ(renderUserData("${DOMAIN}", vm), "${VM_NAME}");
}

}  // namespace
}  // namespace banlieue::controller
