// What a Provider does with its copies of a VMImage being deleted (issue #20, ADR 0037): the
// finalizer's name, which zones are still to clean, the delete_image request, how each answer
// shows in the zone's row, and the row summing them up.
#include "host/roles/provider/image_deletion.h"

#include "host/plugin/payload_schemas.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

rapidjson::Document parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  EXPECT_FALSE(d.HasParseError()) << text;
  return d;
}

plugin::CallResult answer(banlieue_status code, std::string reason = {}, std::string body = {},
                          int64_t requeue_ms = -1) {
  plugin::CallResult r;
  r.outcome.code = code;
  r.outcome.reason = std::move(reason);
  r.outcome.message = "backend says so";
  r.outcome.body = std::move(body);
  r.outcome.requeue_after_ms = requeue_ms;
  return r;
}

TEST(ImageDeletionTest, TheFinalizerNamesTheProviderAndStaysAQualifiedName) {
  EXPECT_EQ(imageFinalizer("team-a", "libvirt-host1"), "images.banlieue.io/team-a.libvirt-host1");
  std::string long_ns(60, 'n');
  auto f = imageFinalizer(long_ns, "p");
  auto name = f.substr(f.find('/') + 1);
  EXPECT_LE(name.size(), 63u) << f;
  EXPECT_EQ(f, imageFinalizer(long_ns, "p")) << "stable";
  EXPECT_NE(f, imageFinalizer(long_ns, "q")) << "two Providers, two finalizers";
}

TEST(ImageDeletionTest, RetainAndTheSourceKindAreReadFromTheSpec) {
  auto image = parse(R"({"spec":{"template":{"retainOnDelete":true},"sources":[
      {"providerClass":"libvirt","kind":"Url"},{"providerClass":"vsphere","kind":"Template",
       "ref":"golden"}]}})");
  EXPECT_TRUE(retainOnDelete(image));
  EXPECT_FALSE(retainOnDelete(parse(R"({"spec":{}})")));
  EXPECT_EQ(sourceKindFor(image, "libvirt"), "Url");
  EXPECT_EQ(sourceKindFor(image, "vsphere"), "Template");
  EXPECT_EQ(sourceKindFor(image, "proxmox"), "");
}

TEST(ImageDeletionTest, ZonesDoneAreNotAskedAgainAndTheOthersKeepTheirRefAndToken) {
  auto row = parse(R"({"zones":[
      {"name":"a","ready":false,"reason":"Deleted"},
      {"name":"b","ready":false,"reason":"Retained"},
      {"name":"c","ready":true,"resolvedRef":"pool/img-c"},
      {"name":"d","ready":false,"reason":"Deleting","resolvedRef":"pool/img-d",
       "operationToken":"task-7"},
      {"name":"e","ready":false,"reason":"ImportFailed"}]})");
  auto zones = zonesToDelete(&row);
  ASSERT_EQ(zones.size(), 3u);
  EXPECT_EQ(zones[0].name, "c");
  EXPECT_EQ(zones[0].resolved_ref, "pool/img-c");
  EXPECT_EQ(zones[1].token, "task-7");
  EXPECT_EQ(zones[2].name, "e") << "a failed import may have left a partial copy";
  EXPECT_TRUE(zonesToDelete(nullptr).empty());
}

TEST(ImageDeletionTest, TheRequestFollowsTheSchema) {
  auto image = parse(R"({"metadata":{"name":"ubuntu","uid":"u1"},"spec":{}})");
  auto first = deleteImageRequest(image, {"zone-a", "pool/ubuntu", ""});
  EXPECT_TRUE(plugin::validatePayload("delete_image.request", first).isOk()) << first;
  auto doc = parse(first);
  EXPECT_EQ(json::stringOr(&doc, "failureDomain"), "zone-a");
  EXPECT_EQ(json::stringOr(&doc, "resolvedRef"), "pool/ubuntu");
  EXPECT_EQ(json::stringOr(&doc, "image.metadata.uid"), "u1");
  EXPECT_EQ(json::find(&doc, "operation"), nullptr);
  auto again = deleteImageRequest(image, {"zone-a", "", "task-3"});
  EXPECT_TRUE(plugin::validatePayload("delete_image.request", again).isOk()) << again;
  auto doc2 = parse(again);
  EXPECT_EQ(json::stringOr(&doc2, "operation.token"), "task-3");
  EXPECT_EQ(json::find(&doc2, "resolvedRef"), nullptr);
}

// A per-target row (<failureDomain>/<target>, docs/adr/0053) is deleted from its target only:
// the request names the row's failure domain and its target; a row without a target sends
// none, as before per-target imports.
TEST(ImageDeletionTest, APerTargetRowIsDeletedFromItsTarget) {
  auto row = parse(R"({"zones":[
      {"name":"host-a/pool-a","failureDomain":"host-a","target":"pool-a","ready":true,
       "resolvedRef":"ubuntu-0123456789ab.raw"},
      {"name":"host-a/pool-b","failureDomain":"host-a","target":"pool-b","ready":false,
       "reason":"Deleted"},
      {"name":"host-b","ready":true,"resolvedRef":"ubuntu-0123456789ab.raw"}]})");
  auto zones = zonesToDelete(&row);
  ASSERT_EQ(zones.size(), 2u);
  EXPECT_EQ(zones[0].name, "host-a/pool-a");
  EXPECT_EQ(zones[0].failure_domain, "host-a");
  EXPECT_EQ(zones[0].target, "pool-a");
  EXPECT_EQ(zones[1].failure_domain, "");
  EXPECT_EQ(zones[1].target, "");

  auto image = parse(R"({"metadata":{"name":"ubuntu","uid":"u1"},"spec":{}})");
  auto targeted = deleteImageRequest(image, zones[0]);
  EXPECT_TRUE(plugin::validatePayload("delete_image.request", targeted).isOk()) << targeted;
  auto doc = parse(targeted);
  EXPECT_EQ(json::stringOr(&doc, "failureDomain"), "host-a");
  EXPECT_EQ(json::stringOr(&doc, "target"), "pool-a");
  EXPECT_EQ(json::stringOr(&doc, "resolvedRef"), "ubuntu-0123456789ab.raw");
  auto whole = parse(deleteImageRequest(image, zones[1]));
  EXPECT_EQ(json::stringOr(&whole, "failureDomain"), "host-b");
  EXPECT_EQ(json::find(&whole, "target"), nullptr);

  // The rows keep naming their failure domain and target while they are deleted.
  ZoneDeletion gone{.done = true, .reason = "Deleted", .message = "removed"};
  auto deleting = deletionRow(&row, "ns", "p", {{zones[0], gone}});
  const auto& out = *json::find(&deleting, "zones");
  ASSERT_EQ(out.Size(), 3u);
  EXPECT_EQ(json::stringOr(&out[0], "name"), "host-a/pool-a");
  EXPECT_EQ(json::stringOr(&out[0], "failureDomain"), "host-a");
  EXPECT_EQ(json::stringOr(&out[0], "target"), "pool-a");
  EXPECT_EQ(json::stringOr(&out[0], "reason"), "Deleted");
  EXPECT_EQ(json::stringOr(&out[1], "target"), "pool-b");
  EXPECT_EQ(json::find(&out[2], "target"), nullptr);
  EXPECT_EQ(json::find(&out[2], "failureDomain"), nullptr);
  EXPECT_EQ(json::stringOr(&deleting, "reason"), "Deleting");
  EXPECT_THAT(json::stringOr(&deleting, "message"), HasSubstr("host-b: "));
}

TEST(ImageDeletionTest, EachAnswerBecomesTheZonesReasonAndWhatToDoNext) {
  auto ok = zoneDeletion(answer(BANLIEUE_OK));
  EXPECT_TRUE(ok.done);
  EXPECT_EQ(ok.reason, "Deleted");
  EXPECT_FALSE(ok.warning);

  auto task = zoneDeletion(
      answer(BANLIEUE_IN_PROGRESS, "Destroying", R"({"operation":{"token":"task-9"}})", 1500));
  EXPECT_FALSE(task.done);
  EXPECT_EQ(task.reason, "Deleting");
  EXPECT_EQ(task.token, "task-9");
  EXPECT_EQ(task.retry_after, std::optional<std::chrono::milliseconds>(1500ms));

  auto old_plugin = zoneDeletion(answer(BANLIEUE_UNIMPLEMENTED, "NotSupportedByBackend"));
  EXPECT_TRUE(old_plugin.done) << "nobody can remove it: the VMImage is not held for ever";
  EXPECT_EQ(old_plugin.reason, "Retained");
  EXPECT_THAT(old_plugin.message, HasSubstr("NotSupportedByBackend"));
  EXPECT_TRUE(old_plugin.warning);

  auto in_use = zoneDeletion(answer(BANLIEUE_FAILED_PRECONDITION, "ImageInUse"));
  EXPECT_FALSE(in_use.done);
  EXPECT_EQ(in_use.reason, "ImageInUse");
  EXPECT_FALSE(in_use.warning) << "waiting for machines to go is no failure";
  EXPECT_EQ(in_use.retry_after, std::optional<std::chrono::milliseconds>(30s));

  auto refused = zoneDeletion(answer(BANLIEUE_PERMISSION_DENIED, "Forbidden"));
  EXPECT_FALSE(refused.done);
  EXPECT_EQ(refused.reason, "Forbidden");
  EXPECT_EQ(refused.message, "backend says so");
  EXPECT_TRUE(refused.warning);
  EXPECT_TRUE(refused.retry_after.has_value());
}

TEST(ImageDeletionTest, TheRowSaysHowFarTheDeletionIsAndKeepsWhatIsStillThere) {
  auto current = parse(R"({"providerName":"p","providerNamespace":"ns","ready":true,
      "reason":"Imported","zones":[
      {"name":"a","ready":true,"resolvedRef":"pool/a"},
      {"name":"b","ready":true,"resolvedRef":"pool/b"}]})");
  ZoneDeletion gone{.done = true, .reason = "Deleted", .message = "removed"};
  ZoneDeletion running{.reason = "Deleting", .message = "task", .token = "t-1"};
  auto row = deletionRow(&current, "ns", "p",
                         {{{"a", "pool/a", ""}, gone}, {{"b", "pool/b", ""}, running}});
  EXPECT_EQ(json::stringOr(&row, "reason"), "Deleting");
  EXPECT_THAT(json::stringOr(&row, "message"), HasSubstr("1 of 2"));
  EXPECT_THAT(json::stringOr(&row, "message"), HasSubstr("b: Deleting"));
  EXPECT_FALSE(json::boolean(&row, "ready", true));
  const auto& zones = *json::find(&row, "zones");
  ASSERT_EQ(zones.Size(), 2u);
  EXPECT_EQ(json::stringOr(&zones[0], "reason"), "Deleted");
  EXPECT_EQ(json::find(&zones[0], "resolvedRef"), nullptr) << "a removed copy has no name";
  EXPECT_EQ(json::stringOr(&zones[1], "operationToken"), "t-1");
  EXPECT_EQ(json::stringOr(&zones[1], "resolvedRef"), "pool/b");

  auto later = deletionRow(&row, "ns", "p", {{{"b", "pool/b", "t-1"}, gone}});
  EXPECT_EQ(json::stringOr(&later, "reason"), "Deleted");
  EXPECT_THAT(json::stringOr(&later, "message"), HasSubstr("2 failure domain(s)"));
  EXPECT_EQ(json::find(&(*json::find(&later, "zones"))[1], "operationToken"), nullptr);
}

}  // namespace
}  // namespace banlieue::roles::provider
