// ProviderClass spec.plugin.sha256 as the operator hands it on (docs/adr/0025): the provider
// pods read the pin from the class themselves; the operator puts it on the Deployment's pod
// template so a changed pin replaces the pods, which then load under it.
#include "host/api/codec.h"
#include "host/api/crd.h"
#include "host/api/kinds.h"
#include "host/roles/operator/workload.h"
#include "host/roles/operator/workload_names.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

namespace banlieue::roles::provider_operator {
namespace {

api::Provider provider() {
  api::Provider p;
  p.metadata.name = "lab";
  p.metadata.namespace_ = "team-a";
  p.metadata.uid = "0b5e-uid";
  p.spec.provider_class_ref.name = "file";
  p.spec.connection.endpoint = "file:///var/lib/vms";
  return p;
}

api::ProviderClass pinnedClass(const std::string& sha256) {
  api::ProviderClass c;
  c.metadata.name = "file";
  c.spec.backend = "file";
  c.spec.plugin = api::PluginRef{"/usr/lib/banlieue/plugins/file", sha256};
  c.spec.image = api::ContainerImage{"localhost/banlieue", "0.1.0", "", "IfNotPresent", {}};
  return c;
}

const rapidjson::Value* podTemplateAnnotations(const Workload& w) {
  for (const auto& o : w.objects) {
    if (o.type.plural == "deployments") {
      return sdk::json::find(&o.body, "spec.template.metadata.annotations");
    }
  }
  ADD_FAILURE() << "no Deployment minted";
  return nullptr;
}

std::string pinOf(const Workload& w) {
  const auto* annotations = podTemplateAnnotations(w);
  const auto* pin = sdk::json::member(annotations, kPluginSha256Annotation);
  return pin != nullptr && pin->IsString() ? pin->GetString() : "";
}

const std::string kPinA(64, 'a');
const std::string kPinB = std::string(63, 'b') + "0";

TEST(PluginPin, TheClassPinIsOnTheProviderPodTemplate) {
  auto w = buildWorkload(provider(), pinnedClass(kPinA), {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(pinOf(*w), kPinA);
}

TEST(PluginPin, AChangedPinChangesThePodTemplateSoThePodsAreReplaced) {
  auto a = buildWorkload(provider(), pinnedClass(kPinA), {});
  auto b = buildWorkload(provider(), pinnedClass(kPinB), {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(pinOf(*b), kPinB);
  EXPECT_NE(pinOf(*a), pinOf(*b));
}

TEST(PluginPin, NoPinNoAnnotation) {
  auto w = buildWorkload(provider(), pinnedClass(""), {});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(sdk::json::member(podTemplateAnnotations(*w), kPluginSha256Annotation), nullptr);
}

TEST(PluginPin, TheCrdFieldRoundTripsAndTheApiserverAcceptsOnlyLowercaseHex) {
  auto decoded = api::fromJson<api::ProviderClass>(
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"ProviderClass","metadata":{"name":"file"},)"
      R"("spec":{"backend":"file","plugin":{"path":"file","sha256":")" +
      kPinA + R"("}}})");
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_TRUE(decoded->spec.plugin.has_value());
  EXPECT_EQ(decoded->spec.plugin->sha256, kPinA);

  for (const auto& kind : api::builtinKinds()) {
    if (kind.kind != "ProviderClass") continue;
    auto crd = api::buildCrd(kind);
    const auto* sha256 = sdk::json::find(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
                                         "properties.spec.properties.plugin.properties.sha256");
    ASSERT_NE(sha256, nullptr) << "the ProviderClass CRD has no spec.plugin.sha256";
    EXPECT_STREQ((*sha256)["pattern"].GetString(), "^[0-9a-f]{64}$");
    return;
  }
  FAIL() << "no ProviderClass kind";
}

}  // namespace
}  // namespace banlieue::roles::provider_operator
