// What kubectl users see of the generated CRDs: every field explained (`kubectl explain`),
// printer columns that say why a VM is not Ready and where it runs, short names that do not
// shadow KubeVirt's or vm-operator's, a scale subresource on pools, conditions validated as
// metav1.Condition is, and a VM's userData naming exactly one source.
#include "host/api/crd.h"
#include "host/api/kinds.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace banlieue::api {
namespace {

namespace json = sdk::json;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

const rapidjson::Value& schemaOf(const rapidjson::Document& crd) {
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

const KindInfo& kindNamed(const std::string& name) {
  for (const auto& kind : builtinKinds()) {
    if (kind.kind == name) return kind;
  }
  throw std::runtime_error("no kind " + name);
}

// Every property under `node`, at any depth (through items and additionalProperties), that
// has no description.
void undescribed(const rapidjson::Value& node, const std::string& path,
                 std::vector<std::string>& out) {
  if (const auto* props = json::member(&node, "properties")) {
    for (const auto& m : props->GetObject()) {
      std::string here = path + "." + m.name.GetString();
      // The root metadata may carry nothing but its type (the apiserver refuses a CRD that
      // describes it); kubectl explain shows ObjectMeta's own text for it.
      bool root_metadata = path.find('.') == std::string::npos && here == path + ".metadata";
      if (json::stringOr(&m.value, "description").empty() && !root_metadata) out.push_back(here);
      undescribed(m.value, here, out);
    }
  }
  if (const auto* items = json::member(&node, "items")) undescribed(*items, path + "[]", out);
  if (const auto* extra = json::member(&node, "additionalProperties");
      extra != nullptr && extra->IsObject()) {
    undescribed(*extra, path + ".*", out);
  }
}

TEST(ApiUxTest, EveryFieldOfEveryCrdHasADescription) {
  std::vector<std::string> missing;
  for (const auto& kind : builtinKinds()) {
    auto crd = buildCrd(kind);
    if (json::stringOr(&schemaOf(crd), "description").empty()) missing.push_back(kind.kind);
    undescribed(schemaOf(crd), kind.kind, missing);
  }
  std::string list;
  for (const auto& path : missing) list += "\n  " + path;
  EXPECT_TRUE(missing.empty()) << missing.size() << " fields without a description:" << list;
}

std::map<std::string, std::string> columnsOf(const KindInfo& kind) {
  std::map<std::string, std::string> out;
  for (const auto& c : kind.columns) out[c.name] = c.json_path;
  return out;
}

TEST(ApiUxTest, VirtualMachineColumnsShowReasonAddressProviderAndFailureDomain) {
  const auto& vm = kindNamed("VirtualMachine");
  auto columns = columnsOf(vm);
  EXPECT_EQ(columns["Ready"], ".status.conditions[?(@.type==\"Ready\")].status");
  EXPECT_EQ(columns["Reason"], ".status.conditions[?(@.type==\"Ready\")].reason");
  EXPECT_EQ(columns["IP"], ".status.addresses[0].address");
  EXPECT_EQ(columns["Provider"], ".status.scheduled.providerName");
  EXPECT_EQ(columns["Failure-Domain"], ".status.scheduled.failureDomain");
  // Reason and IP are in the default view, not only with -o wide.
  for (const auto& c : vm.columns) {
    if (c.name == "Reason" || c.name == "IP") {
      EXPECT_EQ(c.priority, 0) << c.name;
    }
  }
}

TEST(ApiUxTest, ShortNamesDoNotCollideWithKubeVirtOrVmOperator) {
  // Short names of kubevirt.io, pool.kubevirt.io, cdi.kubevirt.io, instancetype.kubevirt.io,
  // snapshot/export/clone.kubevirt.io and vmoperator.vmware.com kinds, plural forms included.
  const std::set<std::string> taken = {"vm",
                                       "vms",
                                       "vmi",
                                       "vmis",
                                       "vmim",
                                       "vmims",
                                       "vmirs",
                                       "vmirss",
                                       "vmpool",
                                       "vmpools",
                                       "vmclone",
                                       "vmclones",
                                       "vmexport",
                                       "vmexports",
                                       "vmsnapshot",
                                       "vmsnapshots",
                                       "vmrestore",
                                       "vmrestores",
                                       "vminstancetype",
                                       "vmf",
                                       "vmfs",
                                       "vmpref",
                                       "vmprefs",
                                       "vmclass",
                                       "vmclasses",
                                       "vmimage",
                                       "vmimages",
                                       "cvmi",
                                       "cvmimage",
                                       "vmservice",
                                       "vmpub",
                                       "vmg",
                                       "dv",
                                       "dvs",
                                       "kv"};
  std::set<std::string> ours;
  for (const auto& kind : builtinKinds()) {
    for (const auto& s : kind.short_names) {
      EXPECT_EQ(taken.count(s), 0u) << kind.kind << " uses " << s;
      EXPECT_TRUE(ours.insert(s).second) << s << " used twice";
    }
  }
  EXPECT_THAT(kindNamed("VirtualMachine").short_names, ElementsAre("bvm"));
  EXPECT_THAT(kindNamed("VirtualMachinePool").short_names, ElementsAre("bvmpool"));
  EXPECT_THAT(kindNamed("VirtualMachineClaim").short_names, ElementsAre("bvmclaim"));
  EXPECT_THAT(kindNamed("VMClass").short_names, ElementsAre("bvmclass"));
  EXPECT_THAT(kindNamed("VMImage").short_names, ElementsAre("bvmimage"));
}

TEST(ApiUxTest, PoolHasAScaleSubresourceOverWarmReplicas) {
  auto crd = buildCrd(kindNamed("VirtualMachinePool"));
  const auto* scale = json::find(&crd["spec"]["versions"][0], "subresources.scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(json::stringOr(scale, "specReplicasPath"), ".spec.warmReplicas");
  EXPECT_EQ(json::stringOr(scale, "statusReplicasPath"), ".status.warmReplicas");
  EXPECT_EQ(json::stringOr(scale, "labelSelectorPath"), ".status.selector");
  const auto& status = schemaOf(crd)["properties"]["status"]["properties"];
  ASSERT_TRUE(status.HasMember("warmReplicas"));
  EXPECT_EQ(json::stringOr(&status["warmReplicas"], "type"), "integer");
  ASSERT_TRUE(status.HasMember("selector"));
  EXPECT_EQ(json::stringOr(&status["selector"], "type"), "string");
  // Only the pool scales.
  for (const auto& kind : builtinKinds()) {
    if (kind.kind == "VirtualMachinePool") continue;
    auto other = buildCrd(kind);
    EXPECT_EQ(json::find(&other["spec"]["versions"][0], "subresources.scale"), nullptr)
        << kind.kind;
  }
}

std::set<std::string> requiredOf(const rapidjson::Value& schema) {
  std::set<std::string> out;
  if (const auto* r = json::member(&schema, "required")) {
    for (const auto& v : r->GetArray()) out.insert(v.GetString());
  }
  return out;
}

TEST(ApiUxTest, ConditionsAreValidatedAsMetav1ConditionIs) {
  int kinds_with_conditions = 0;
  for (const auto& kind : builtinKinds()) {
    if (kind.status_schema == nullptr) continue;
    auto crd = buildCrd(kind);
    const auto* conditions =
        json::member(&schemaOf(crd)["properties"]["status"]["properties"], "conditions");
    ASSERT_NE(conditions, nullptr) << kind.kind;
    ++kinds_with_conditions;
    const auto& item = (*conditions)["items"];
    EXPECT_EQ(requiredOf(item),
              (std::set<std::string>{"type", "status", "lastTransitionTime", "reason", "message"}))
        << kind.kind;
    const auto& p = item["properties"];
    EXPECT_EQ(json::integer(&p["type"], "maxLength").value_or(0), 316) << kind.kind;
    EXPECT_FALSE(json::stringOr(&p["type"], "pattern").empty()) << kind.kind;
    std::vector<std::string> statuses;
    if (const auto* values = json::member(&p["status"], "enum")) {
      for (const auto& v : values->GetArray()) statuses.emplace_back(v.GetString());
    }
    EXPECT_THAT(statuses, UnorderedElementsAre("True", "False", "Unknown")) << kind.kind;
    EXPECT_EQ(json::stringOr(&p["lastTransitionTime"], "format"), "date-time") << kind.kind;
    EXPECT_EQ(json::stringOr(&p["reason"], "pattern"), "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
        << kind.kind;
    EXPECT_EQ(json::integer(&p["reason"], "minLength").value_or(0), 1) << kind.kind;
    EXPECT_EQ(json::integer(&p["reason"], "maxLength").value_or(0), 1024) << kind.kind;
    EXPECT_EQ(json::integer(&p["message"], "maxLength").value_or(0), 32768) << kind.kind;
    EXPECT_EQ(json::integer(&p["observedGeneration"], "minimum").value_or(-1), 0) << kind.kind;
  }
  EXPECT_GE(kinds_with_conditions, 10);
}

TEST(ApiUxTest, UserDataAndCaBundleNameExactlyOneSourceInTheSchema) {
  auto crd = buildCrd(kindNamed("VirtualMachine"));
  const auto* user_data =
      json::member(&schemaOf(crd)["properties"]["spec"]["properties"], "userData");
  ASSERT_NE(user_data, nullptr);
  const auto* one_of = json::member(user_data, "oneOf");
  ASSERT_NE(one_of, nullptr);
  ASSERT_TRUE(one_of->IsArray());
  std::vector<std::set<std::string>> branches;
  for (const auto& branch : one_of->GetArray()) branches.push_back(requiredOf(branch));
  EXPECT_THAT(branches, UnorderedElementsAre(std::set<std::string>{"secretRef"},
                                             std::set<std::string>{"configMapRef"}));
  // The pool's member template carries the same rule.
  auto pool = buildCrd(kindNamed("VirtualMachinePool"));
  const auto* template_user_data = json::member(
      &schemaOf(
          pool)["properties"]["spec"]["properties"]["template"]["properties"]["spec"]["properties"],
      "userData");
  ASSERT_NE(template_user_data, nullptr);
  EXPECT_NE(json::member(template_user_data, "oneOf"), nullptr);
  // So does a Provider's CA bundle.
  auto provider = buildCrd(kindNamed("Provider"));
  const auto* ca_bundle = json::find(
      &schemaOf(provider), "properties.spec.properties.connection.properties.caBundle.oneOf");
  ASSERT_NE(ca_bundle, nullptr);
  EXPECT_EQ(ca_bundle->Size(), 3u);
}

}  // namespace
}  // namespace banlieue::api
