// The CRDs crdgen builds: structural (every node typed, list-map keys required or defaulted),
// no CEL, the metadata kubectl and CAPI rely on, and a lossless YAML rendering.
#include "host/api/crd.h"
#include "host/api/infra_cluster.h"
#include "host/api/kinds.h"
#include "host/api/yaml.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <set>

namespace banlieue::api {
namespace {

namespace json = sdk::json;

// Walks a schema node and records every structural-schema violation with its path.
void checkStructural(const rapidjson::Value& node, const std::string& path,
                     std::vector<std::string>& problems) {
  if (node.HasMember("x-kubernetes-validations")) problems.push_back(path + ": uses CEL");
  bool int_or_string = node.HasMember("x-kubernetes-int-or-string");
  if (!node.HasMember("type") && !int_or_string) problems.push_back(path + ": no type");
  std::string type = json::stringOr(&node, "type");
  if (const auto* props = json::member(&node, "properties")) {
    if (type != "object") problems.push_back(path + ": properties on a non-object");
    for (const auto& m : props->GetObject()) {
      checkStructural(m.value, path + "." + m.name.GetString(), problems);
    }
    if (const auto* required = json::member(&node, "required")) {
      for (const auto& r : required->GetArray()) {
        if (!props->HasMember(r.GetString())) {
          problems.push_back(path + ": requires undeclared " + r.GetString());
        }
      }
    }
  }
  if (const auto* extra = json::member(&node, "additionalProperties")) {
    checkStructural(*extra, path + ".*", problems);
  }
  if (type == "array") {
    const auto* items = json::member(&node, "items");
    if (items == nullptr) {
      problems.push_back(path + ": array without items");
      return;
    }
    checkStructural(*items, path + "[]", problems);
    if (json::stringOr(&node, "x-kubernetes-list-type") == "map") {
      const auto* keys = json::member(&node, "x-kubernetes-list-map-keys");
      if (keys == nullptr || keys->Empty()) problems.push_back(path + ": map list without keys");
      std::set<std::string> required;
      if (const auto* r = json::member(items, "required")) {
        for (const auto& k : r->GetArray()) required.insert(k.GetString());
      }
      for (const auto& k : keys->GetArray()) {
        const auto* prop = json::member(json::member(items, "properties"), k.GetString());
        if (prop == nullptr) {
          problems.push_back(path + ": map key " + k.GetString() + " is not a property");
        } else if (required.count(k.GetString()) == 0 && !prop->HasMember("default")) {
          problems.push_back(path + ": map key " + k.GetString() +
                             " neither required nor defaulted");
        }
      }
    }
  }
}

const rapidjson::Value& versionOf(const rapidjson::Document& crd) {
  return crd["spec"]["versions"][0];
}

const rapidjson::Value* propertyAt(const rapidjson::Value& schema,
                                   std::initializer_list<const char*> path) {
  const rapidjson::Value* node = &schema;
  for (const char* p : path) {
    if (std::string(p) == "[]") {
      node = json::member(node, "items");
    } else {
      node = json::member(json::member(node, "properties"), p);
    }
    if (node == nullptr) return nullptr;
  }
  return node;
}

TEST(ApiCrdTest, EveryKindIsStructuralWithoutCel) {
  ASSERT_EQ(builtinKinds().size(), 18u);
  for (const auto& kind : builtinKinds()) {
    auto crd = buildCrd(kind);
    std::vector<std::string> problems;
    checkStructural(versionOf(crd)["schema"]["openAPIV3Schema"], kind.kind, problems);
    EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  }
}

TEST(ApiCrdTest, NamesScopeColumnsAndCategories) {
  std::map<std::string, std::pair<std::string, bool>> expected = {
      {"VirtualMachine", {"bvm", true}},       {"VMClass", {"bvmclass", false}},
      {"VMImage", {"bvmimage", false}},        {"Provider", {"prov", true}},
      {"ProviderClass", {"provclass", false}}, {"VirtualMachinePool", {"bvmpool", true}}};
  for (const auto& kind : builtinKinds()) {
    auto crd = buildCrd(kind);
    const auto& names = crd["spec"]["names"];
    EXPECT_EQ(json::stringOr(&crd["metadata"], "name"), kind.plural + "." + kind.group);
    bool banlieue_category = false;
    for (const auto& c : names["categories"].GetArray()) {
      banlieue_category = banlieue_category || std::string(c.GetString()) == "banlieue";
    }
    EXPECT_TRUE(banlieue_category) << kind.kind;
    EXPECT_TRUE(versionOf(crd).HasMember("additionalPrinterColumns")) << kind.kind;
    if (auto it = expected.find(kind.kind); it != expected.end()) {
      EXPECT_EQ(names["shortNames"][0].GetString(), it->second.first);
      EXPECT_EQ(json::stringOr(&crd["spec"], "scope"),
                it->second.second ? "Namespaced" : "Cluster");
    }
    bool has_status = versionOf(crd).HasMember("subresources");
    EXPECT_EQ(has_status, kind.status_schema != nullptr) << kind.kind;
  }
}

TEST(ApiCrdTest, InfraKindsCarryTheCapiContract) {
  int infra = 0;
  for (const auto& kind : builtinKinds()) {
    if (kind.group != kInfraGroup) continue;
    ++infra;
    auto crd = buildCrd(kind);
    // A direct lookup: the label key contains dots, which json::member reads as a path.
    const auto& labels = crd["metadata"]["labels"];
    auto label = labels.FindMember(kCapiContractLabel);
    ASSERT_NE(label, labels.MemberEnd()) << kind.kind;
    EXPECT_STREQ(label->value.GetString(), "v1beta2") << kind.kind;
    EXPECT_EQ(json::stringOr(&versionOf(crd), "name"), "v1beta2");
    // Templates and InfraClusters are not InfraMachines.
    if (kind.kind.find("Template") != std::string::npos ||
        std::find(std::begin(kInfraClusterKinds), std::end(kInfraClusterKinds), kind.kind) !=
            std::end(kInfraClusterKinds)) {
      continue;
    }
    const auto& schema = versionOf(crd)["schema"]["openAPIV3Schema"];
    for (auto path : {std::vector<const char*>{"spec", "providerID"},
                      std::vector<const char*>{"spec", "failureDomain"},
                      std::vector<const char*>{"status", "initialization", "provisioned"},
                      std::vector<const char*>{"status", "addresses"},
                      std::vector<const char*>{"status", "failureDomain"},
                      std::vector<const char*>{"status", "conditions"}}) {
      const rapidjson::Value* node = &schema;
      for (const char* p : path) node = json::member(json::member(node, "properties"), p);
      EXPECT_NE(node, nullptr) << kind.kind << " lacks " << path.back();
    }
  }
  EXPECT_EQ(infra, 9);  // 3 machines, 3 templates, 3 InfraClusters
}

TEST(ApiCrdTest, MultiWriterListsAreMaps) {
  for (const auto& kind : builtinKinds()) {
    auto crd = buildCrd(kind);
    const auto& schema = versionOf(crd)["schema"]["openAPIV3Schema"];
    if (kind.kind == "VMImage") {
      const auto* per_provider = propertyAt(schema, {"status", "perProvider"});
      ASSERT_NE(per_provider, nullptr);
      EXPECT_EQ(json::stringOr(per_provider, "x-kubernetes-list-type"), "map");
      const auto& keys = (*per_provider)["x-kubernetes-list-map-keys"];
      ASSERT_EQ(keys.Size(), 2u);
      EXPECT_STREQ(keys[0].GetString(), "providerName");
      EXPECT_STREQ(keys[1].GetString(), "providerNamespace");
    }
    if (kind.status_schema != nullptr) {
      const auto* conditions = propertyAt(schema, {"status", "conditions"});
      ASSERT_NE(conditions, nullptr) << kind.kind;
      EXPECT_EQ(json::stringOr(conditions, "x-kubernetes-list-type"), "map") << kind.kind;
    }
  }
}

TEST(ApiCrdTest, SchemaCarriesEnumsRangesAndDefaults) {
  for (const auto& kind : builtinKinds()) {
    auto crd = buildCrd(kind);
    const auto& schema = versionOf(crd)["schema"]["openAPIV3Schema"];
    if (kind.kind == "VMClass") {
      const auto* cpus = propertyAt(schema, {"spec", "hardware", "cpus"});
      ASSERT_NE(cpus, nullptr);
      EXPECT_EQ((*cpus)["minimum"].GetInt(), 1);
      EXPECT_EQ((*cpus)["maximum"].GetInt(), 256);
      EXPECT_STREQ((*propertyAt(schema, {"spec", "firmware"}))["default"].GetString(), "efi");
    }
    if (kind.kind == "VirtualMachine") {
      const auto* power = propertyAt(schema, {"spec", "desiredPowerState"});
      ASSERT_NE(power, nullptr);
      EXPECT_EQ((*power)["enum"].Size(), 3u);
      std::set<std::string> required;
      for (const auto& r : (*propertyAt(schema, {"spec"}))["required"].GetArray()) {
        required.insert(r.GetString());
      }
      EXPECT_EQ(required, (std::set<std::string>{"classRef", "imageRef"}));
    }
  }
}

TEST(ApiYamlTest, CrdsSurviveYamlRoundTrip) {
  for (const auto& kind : builtinKinds()) {
    auto crd = buildCrd(kind);
    auto yaml = toYaml(crd);
    ASSERT_TRUE(yaml.ok()) << yaml.status().message();
    auto docs = parseYamlDocuments(*yaml, kind.kind);
    ASSERT_TRUE(docs.ok()) << docs.status().message();
    ASSERT_EQ(docs->size(), 1u);
    EXPECT_TRUE((*docs)[0] == crd) << kind.kind;
  }
}

TEST(ApiYamlTest, AmbiguousStringsAreQuoted) {
  auto doc = json::parse(
      R"({"a": "true", "b": "1", "c": "on", "d": "", "e": "x: y", "f": "- z", "g": "#c",
          "h": "1.5", "i": "null", "j": "plain words", "k": [1, 2.5, true, null],
          "l": {}, "m": [], "n": "multi\nline", "o": "~", "p": [[1], {"q": "r"}],
          "s": "NO", "t": " lead", "u": "0x1F"})",
      "t");
  auto emitted = toYaml(doc);
  ASSERT_TRUE(emitted.ok()) << emitted.status().message();
  const std::string& yaml = *emitted;
  auto back = parseYamlDocuments(yaml, "t");
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << yaml;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_TRUE((*back)[0] == doc) << yaml;
  EXPECT_NE(yaml.find("j: plain words\n"), std::string::npos) << yaml;
}

// Plain scalars are typed by the YAML 1.2 core schema's int and float forms (scanned by hand
// since the fuzzer found the regular expressions too slow); everything else stays a string.
TEST(ApiYamlTest, PlainScalarsAreTypedByTheCoreSchema) {
  auto docs = parseYamlDocuments(
      "ints: [0, 7, -12, +3, 007]\n"
      "floats: [1.5, -0.25, .5, +.5, 1., 1e3, 2E-2, 1.5e+2, -.5e1]\n"
      "strings: [., -., e3, 1e, 1e+, 1.2.3, 0x1F, 1_000, 12a, '', ' 1', +, -, 1 2, 3.e, .e1]\n",
      "t");
  ASSERT_TRUE(docs.ok()) << docs.status().message();
  const auto& doc = (*docs)[0];
  for (const auto& v : doc["ints"].GetArray()) EXPECT_TRUE(v.IsInt64()) << json::serialize(v);
  for (const auto& v : doc["floats"].GetArray()) EXPECT_TRUE(v.IsDouble()) << json::serialize(v);
  for (const auto& v : doc["strings"].GetArray()) EXPECT_TRUE(v.IsString()) << json::serialize(v);
  EXPECT_EQ(doc["ints"][4].GetInt64(), 7);
  EXPECT_DOUBLE_EQ(doc["floats"][8].GetDouble(), -5.0);
  EXPECT_EQ(doc["strings"].Size(), 16u);
}

TEST(ApiYamlTest, BadYamlNamesTheSourceAndLine) {
  auto docs = parseYamlDocuments("a: [1, 2\nb: c\n", "crds/x.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("crds/x.yaml: not valid YAML"), std::string::npos)
      << docs.status().message();
  auto multi = parseYamlDocuments("---\na: 1\n---\n---\nb: 2\n", "s");
  ASSERT_TRUE(multi.ok());
  EXPECT_EQ(multi->size(), 2u);
}

}  // namespace
}  // namespace banlieue::api
