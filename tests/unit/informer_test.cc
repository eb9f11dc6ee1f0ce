// The reflector/informer against a scripted client: list, watch, resume, relist on Gone,
// pages, indexes and handler calls.
#include "host/runtime/informer.h"
#include "host/kube/client.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>

namespace banlieue::runtime {
namespace {

using ::testing::ElementsAre;
namespace json = sdk::json;

std::string cm(const std::string& name, const std::string& rv, const std::string& extra = "") {
  return R"({"metadata":{"name":")" + name + R"(","namespace":"ns","uid":"uid-)" + name +
         R"(","resourceVersion":")" + rv + "\"" + extra + "}}";
}

struct WatchScript {
  std::vector<std::pair<std::string, std::string>> events;  // type, object json
  Status end = Status::ok();
  bool stop_after = false;
};

class ScriptedClient final : public kube::KubeClient {
 public:
  std::deque<std::string> list_pages;  // JSON list bodies, one per call
  std::deque<WatchScript> watches;
  std::vector<std::string> list_continue_tokens;
  std::vector<std::string> watch_versions;
  std::atomic<bool>* stop = nullptr;

  StatusOr<rapidjson::Document> list(const kube::ResourceType&, const std::string&,
                                     const kube::ListOptions& options) override {
    list_continue_tokens.push_back(options.continue_token);
    if (list_pages.empty())
      return error(Code::kUnavailable, "ConnectionFailed", "no page scripted");
    auto page = json::parse(list_pages.front(), "page");
    list_pages.pop_front();
    return page;
  }
  Status watch(const kube::ResourceType&, const std::string&, const kube::WatchOptions& options,
               const std::function<bool(kube::WatchEvent&)>& on_event,
               const std::atomic<bool>*) override {
    watch_versions.push_back(options.resource_version);
    if (watches.empty()) {
      *stop = true;
      return Status::ok();
    }
    WatchScript script = watches.front();
    watches.pop_front();
    for (const auto& [type, object] : script.events) {
      kube::WatchEvent e;
      e.type = type;
      e.object = json::parse(object, "event");
      if (!on_event(e)) break;
    }
    if (script.stop_after) *stop = true;
    return script.end;
  }
  // Unused by the informer.
  StatusOr<rapidjson::Document> get(const kube::ResourceType&, const std::string&,
                                    const std::string&, const std::string&) override {
    return error(Code::kUnimplemented, "Unused", "");
  }
  StatusOr<rapidjson::Document> create(const kube::ResourceType&, const std::string&,
                                       const std::string&) override {
    return error(Code::kUnimplemented, "Unused", "");
  }
  StatusOr<rapidjson::Document> update(const kube::ResourceType&, const std::string&,
                                       const std::string&, const std::string&,
                                       const std::string&) override {
    return error(Code::kUnimplemented, "Unused", "");
  }
  StatusOr<rapidjson::Document> patch(const kube::ResourceType&, const std::string&,
                                      const std::string&, kube::PatchType, const std::string&,
                                      const std::string&) override {
    return error(Code::kUnimplemented, "Unused", "");
  }
  StatusOr<rapidjson::Document> apply(const kube::ResourceType&, const std::string&,
                                      const std::string&, const std::string&,
                                      const kube::ApplyOptions&) override {
    return error(Code::kUnimplemented, "Unused", "");
  }
  Status remove(const kube::ResourceType&, const std::string&, const std::string&,
                const kube::DeleteOptions&) override {
    return error(Code::kUnimplemented, "Unused", "");
  }
};

std::string page(const std::vector<std::string>& items, const std::string& rv,
                 const std::string& cont = "") {
  std::string body = R"({"kind":"ConfigMapList","metadata":{"resourceVersion":")" + rv +
                     R"(","continue":")" + cont + R"("},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) body += (i ? "," : "") + items[i];
  return body + "]}";
}

TEST(InformerTest, ListsWatchesResumesAndRelistsOnGone) {
  ScriptedClient client;
  std::atomic<bool> stop{false};
  client.stop = &stop;
  client.list_pages = {page({cm("a", "9"), cm("b", "10")}, "10")};
  client.watches.push_back({{{"ADDED", cm("c", "11")},
                             {"MODIFIED", cm("a", "12")},
                             {"DELETED", cm("b", "13")},
                             {"BOOKMARK", R"({"metadata":{"resourceVersion":"15"}})"}}});
  client.watches.push_back({{}, error(Code::kOutOfRange, "Expired", "too old resource version")});
  client.list_pages.push_back(page({cm("a", "12"), cm("d", "18")}, "20"));  // c vanished meanwhile
  client.watches.push_back({{}, Status::ok(), /*stop_after=*/true});

  Informer informer(client, kube::resources::kConfigMap, {});
  std::vector<std::string> calls;
  informer.addHandler({[&](const Object& o) { calls.push_back("add " + objectKey(*o)); },
                       [&](const Object& o, const Object& n) {
                         calls.push_back("update " + objectKey(*n) + " " +
                                         json::stringOr(o.get(), "metadata.resourceVersion") +
                                         "->" +
                                         json::stringOr(n.get(), "metadata.resourceVersion"));
                       },
                       [&](const Object& o) { calls.push_back("delete " + objectKey(*o)); }});
  informer.run(stop);

  EXPECT_THAT(calls, ElementsAre("add ns/a", "add ns/b", "add ns/c", "update ns/a 9->12",
                                 "delete ns/b", "delete ns/c", "add ns/d"))
      << "the relist reports c as deleted and leaves the unchanged a alone";
  EXPECT_THAT(client.watch_versions, ElementsAre("10", "15", "20"))
      << "watch from the list's version, resume from the bookmark, restart from the relist";
  EXPECT_TRUE(informer.hasSynced());
  EXPECT_EQ(informer.stats().lists, 2u);
  ASSERT_NE(informer.get("ns/d"), nullptr);
  EXPECT_EQ(json::stringOr(informer.get("ns/d").get(), "kind"), "ConfigMap")
      << "list items get their kind";
  EXPECT_EQ(informer.get("ns/b"), nullptr);
}

TEST(InformerTest, FollowsListPages) {
  ScriptedClient client;
  std::atomic<bool> stop{false};
  client.stop = &stop;
  client.list_pages = {page({cm("a", "1")}, "5", "token-1"), page({cm("b", "2")}, "5", "")};
  Informer informer(client, kube::resources::kConfigMap, {.page_size = 1});
  informer.run(stop);
  EXPECT_THAT(client.list_continue_tokens, ElementsAre("", "token-1"));
  EXPECT_EQ(informer.list().size(), 2u);
}

TEST(InformerTest, IndexesByNamespaceOwnerAndCustomFunctions) {
  ScriptedClient client;
  std::atomic<bool> stop{false};
  client.stop = &stop;
  client.list_pages = {
      page({cm("a", "1", R"(,"labels":{"tier":"gold"},"ownerReferences":[{"uid":"owner-1"}])"),
            cm("b", "2", R"(,"labels":{"tier":"gold"})"), cm("c", "3")},
           "3")};
  client.watches.push_back(
      {{{"MODIFIED", cm("b", "4", R"(,"labels":{"tier":"silver"})")}}, Status::ok(), true});
  Informer informer(client, kube::resources::kConfigMap, {});
  informer.addIndexer("tier", [](const rapidjson::Value& o) {
    auto tier = json::stringOr(&o, "metadata.labels.tier");
    return tier.empty() ? std::vector<std::string>{} : std::vector<std::string>{tier};
  });
  informer.run(stop);
  EXPECT_EQ(informer.byIndex("namespace", "ns").size(), 3u);
  ASSERT_EQ(informer.byIndex("owner", "owner-1").size(), 1u);
  EXPECT_EQ(objectKey(*informer.byIndex("owner", "owner-1")[0]), "ns/a");
  EXPECT_EQ(informer.byIndex("tier", "gold").size(), 1u)
      << "b moved to silver and left the gold index";
  EXPECT_EQ(informer.byIndex("tier", "silver").size(), 1u);
  EXPECT_THAT(informer.keysByIndex("tier", "gold"), ElementsAre("ns/a"))
      << "keys come from the index alone";
  EXPECT_EQ(informer.countByIndex("namespace", "ns"), 3u);
  EXPECT_EQ(informer.countByIndex("tier", "bronze"), 0u);
  EXPECT_TRUE(informer.keysByIndex("no-such-index", "x").empty());
  EXPECT_THAT(informer.keys(), ElementsAre("ns/a", "ns/b", "ns/c"));
  EXPECT_EQ(informer.size(), 3u);
}

// The cache keeps compact text and parses it for each reader (ADR 0051): what a reader gets is
// the whole object as received (its bookkeeping aside), and its own copy.
TEST(InformerTest, EachReadIsACompleteParsedCopy) {
  ScriptedClient client;
  std::atomic<bool> stop{false};
  client.stop = &stop;
  const std::string spec =
      R"(,"labels":{"a":"b"}},"spec":{"n":1.5,"list":[1,"two",null,true],"nested":{"s":"\u00e9\"q\""})";
  client.list_pages = {page({cm("a", "1", spec)}, "1")};
  client.watches.push_back({{}, Status::ok(), true});
  Informer informer(client, kube::resources::kConfigMap, {});
  informer.run(stop);
  auto first = informer.get("ns/a");
  auto second = informer.get("ns/a");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first.get(), second.get()) << "each reader owns its parsed copy";
  EXPECT_EQ(json::serialize(*first), json::serialize(*second));
  EXPECT_EQ(json::stringOr(first.get(), "metadata.labels.a"), "b");
  EXPECT_EQ(json::stringOr(first.get(), "spec.nested.s"), "\u00e9\"q\"");
  const auto* list = json::find(first.get(), "spec.list");
  ASSERT_NE(list, nullptr);
  ASSERT_TRUE(list->IsArray());
  EXPECT_EQ(list->Size(), 4u);
  EXPECT_DOUBLE_EQ(json::find(first.get(), "spec.n")->GetDouble(), 1.5);
}

}  // namespace
}  // namespace banlieue::runtime

namespace banlieue::runtime {
namespace {

// What `kubectl apply` leaves on an object: a managedFields entry per writer and the whole
// applied manifest again as an annotation.
std::string applied(const std::string& name, const std::string& rv) {
  return cm(name, rv,
            R"(,"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"big\":1}",)"
            R"("banlieue.io/applied-hash":"h1"},)"
            R"("managedFields":[{"manager":"kubectl","fieldsV1":{"f:data":{}}}])");
}

TEST(InformerTest, CachedObjectsLeaveOutTheWritersBookkeeping) {
  ScriptedClient client;
  std::atomic<bool> stop{false};
  client.stop = &stop;
  client.list_pages = {page({applied("a", "1")}, "1")};
  client.watches.push_back({{{"ADDED", applied("b", "2")}}, Status::ok(), true});
  Informer informer(client, kube::resources::kConfigMap, {});
  informer.run(stop);
  for (const char* key : {"ns/a", "ns/b"}) {  // one from the list, one from the watch
    auto object = informer.get(key);
    ASSERT_NE(object, nullptr) << key;
    EXPECT_EQ(json::find(object.get(), "metadata.managedFields"), nullptr) << key;
    const auto* annotations = json::find(object.get(), "metadata.annotations");
    ASSERT_NE(annotations, nullptr) << key;
    EXPECT_FALSE(annotations->HasMember("kubectl.kubernetes.io/last-applied-configuration")) << key;
    ASSERT_TRUE(annotations->HasMember("banlieue.io/applied-hash"))
        << key << ": other annotations stay";
    EXPECT_STREQ((*annotations)["banlieue.io/applied-hash"].GetString(), "h1");
    EXPECT_EQ(json::stringOr(object.get(), "metadata.resourceVersion"), key[3] == 'a' ? "1" : "2");
  }
}

TEST(InformerTest, ACallerThatNeedsTheBookkeepingKeepsIt) {
  ScriptedClient client;
  std::atomic<bool> stop{false};
  client.stop = &stop;
  client.list_pages = {page({applied("a", "1")}, "1")};
  client.watches.push_back({{{"MODIFIED", applied("a", "2")}}, Status::ok(), true});
  Informer informer(client, kube::resources::kConfigMap, {.keep_write_bookkeeping = true});
  informer.run(stop);
  auto object = informer.get("ns/a");
  ASSERT_NE(object, nullptr);
  EXPECT_EQ(json::stringOr(object.get(), "metadata.resourceVersion"), "2");
  EXPECT_NE(json::find(object.get(), "metadata.managedFields"), nullptr);
  const auto* annotations = json::find(object.get(), "metadata.annotations");
  ASSERT_NE(annotations, nullptr);
  EXPECT_TRUE(annotations->HasMember("kubectl.kubernetes.io/last-applied-configuration"));
}

}  // namespace
}  // namespace banlieue::runtime

namespace banlieue::runtime {
namespace {

// A VirtualMachine-like object: what the informer of a large cache holds thousands of.
std::string machine(int i, const std::string& rv) {
  const std::string n = std::to_string(i);
  return R"({"metadata":{"name":"vm-)" + n + R"(","namespace":"ns","uid":"1f0c)" + n +
         R"(-6e2a-4f4e-9d3b-0c1d2e3f4a5b","resourceVersion":")" + rv +
         R"(","creationTimestamp":"2026-12-06T15:46:42Z","finalizers":["banlieue.io/virtualmachine"]},)"
         R"("spec":{"classRef":{"name":"small"},"imageRef":{"name":"debian-12"},)"
         R"("desiredPowerState":"PoweredOn"},"status":{"conditions":[)"
         R"({"lastTransitionTime":"2026-12-06T15:46:42Z","message":"VirtualMachine scheduled",)"
         R"("observedGeneration":1,"reason":"Scheduled","status":"True","type":"Scheduled"},)"
         R"({"lastTransitionTime":"2026-12-06T15:46:44Z","message":"the backend machine matches)"
         R"( the spec","observedGeneration":1,"reason":"Provisioned","status":"True",)"
         R"("type":"InfrastructureReady"}],"scheduled":{"providerName":"p-)" +
         std::to_string(i % 3) + R"(","failureDomain":"zone-a"},"addresses":[{"address":"10.0.)" +
         std::to_string(i % 250) + R"(.7","type":"InternalIP"}]}})";
}

// Issue #23: 10,000 cached VMs must fit the roles' 64 MB. Siblings share nearly every key and
// most values, so each is kept packed against an earlier one (docs/adr/0055).
TEST(InformerTest, ACacheOfSiblingsKeepsAFractionOfTheirText) {
  ScriptedClient client;
  std::atomic<bool> stop{false};
  client.stop = &stop;
  std::vector<std::string> items;
  size_t text_bytes = 0;
  for (int i = 0; i < 200; ++i) {
    items.push_back(machine(i, std::to_string(100 + i)));
    text_bytes += json::serialize(json::parse(items.back(), "machine")).size();
  }
  client.list_pages = {page(items, "300")};
  client.watches.push_back({{{"MODIFIED", machine(7, "301")}}, Status::ok(), true});
  Informer informer(client, kube::resources::kConfigMap, {});
  informer.run(stop);

  ASSERT_EQ(informer.size(), 200u);
  EXPECT_LT(informer.bytes() * 4, text_bytes)
      << informer.bytes() << " bytes held for " << text_bytes << " bytes of text";
  // What comes back is the object, exactly (a list item with the kind the list named).
  for (int i : {0, 7, 199}) {
    auto cached = informer.get("ns/vm-" + std::to_string(i));
    ASSERT_NE(cached, nullptr);
    rapidjson::Document copy;
    copy.CopyFrom(*cached, copy.GetAllocator());
    copy.RemoveMember("apiVersion");
    copy.RemoveMember("kind");
    EXPECT_EQ(json::serialize(copy),
              json::serialize(
                  json::parse(machine(i, i == 7 ? "301" : std::to_string(100 + i)), "machine")));
  }
}

}  // namespace
}  // namespace banlieue::runtime
