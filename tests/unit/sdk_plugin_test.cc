// The SDK's trampolines and the fake host, exercised with the test plugin linked statically.
#include <banlieue/sdk/provider.h>
#include <banlieue/sdk/testing/fake_host.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

extern "C" const banlieue_provider_v1* test_plugin_static_init(const banlieue_host_v1*, uint32_t,
                                                               const banlieue_sink*);

namespace banlieue::sdk {
namespace {

using ::testing::HasSubstr;

const char* kConfig =
    R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"p"},"spec":{"connection":{"endpoint":"test://"}}},"credentials":{"password":"right"}})";

class SdkPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = host_.load(&test_plugin_static_init);
    auto call = host_.call();
    auto created = client_.instanceCreate(call, kConfig, &instance_);
    ASSERT_TRUE(created.ok()) << created.message;
  }
  void TearDown() override { client_.instanceDestroy(instance_, host_.call()); }

  abi::CallOutcome reconcile(const std::string& request,
                             std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    auto call = host_.call("uid-1", timeout);
    return client_.reconcile(instance_, call, "TestMachine", request);
  }

  testing::FakeHost host_;
  abi::ProviderClient client_;
  banlieue_instance* instance_ = nullptr;
};

TEST_F(SdkPluginTest, TableHeaderIsStampedBySdk) {
  const auto& h = client_.table().header;
  EXPECT_EQ(h.magic, BANLIEUE_PROVIDER_MAGIC);
  EXPECT_EQ(h.struct_size, sizeof(banlieue_provider_v1));
  EXPECT_EQ(h.layout_fingerprint, BANLIEUE_V1_LAYOUT_FINGERPRINT);
  EXPECT_STREQ(client_.table().name, "testprov");
}

TEST_F(SdkPluginTest, LongTaskRoundTripsItsOperationToken) {
  const std::string object =
      R"("object":{"metadata":{"name":"vm1","namespace":"ns","uid":"uid-1"}})";
  auto started = reconcile("{" + object + "}");
  ASSERT_EQ(started.code, BANLIEUE_IN_PROGRESS);
  EXPECT_EQ(started.reason, "Provisioning");
  EXPECT_THAT(started.body, HasSubstr(R"("operation":{"token":"task-uid-1")"));
  auto done = reconcile("{" + object + R"(,"operation":{"token":"task-uid-1"}})");
  ASSERT_TRUE(done.ok()) << done.message;
  EXPECT_THAT(done.body, HasSubstr(R"("initialization":{"provisioned":true})"));
  // A token from before a restart is treated as absent: the task starts again, new token.
  auto stale = reconcile("{" + object + R"(,"operation":{"token":"task-from-before-a-restart"}})");
  EXPECT_EQ(stale.code, BANLIEUE_IN_PROGRESS);
  EXPECT_THAT(stale.body, HasSubstr(R"("token":"task-uid-1")"));

  ASSERT_EQ(host_.events().size(), 1u);
  EXPECT_EQ(host_.events()[0].reason, "Provisioned");
  EXPECT_EQ(host_.events()[0].object_uid, "uid-1");
  bool logged = false;
  for (const auto& line : host_.logs()) logged |= line.message == "provisioned ns/vm1";
  EXPECT_TRUE(logged);
}

TEST_F(SdkPluginTest, AnOperationStartedBeforeAFailureStillReachesTheHost) {
  auto failed = reconcile(
      R"({"object":{"metadata":{"name":"vm1","uid":"uid-1"},"spec":{"failAfterStart":true}}})");
  EXPECT_EQ(failed.code, BANLIEUE_UNAVAILABLE);
  EXPECT_EQ(failed.reason, "BackendBusy");
  EXPECT_THAT(failed.body, HasSubstr(R"("operation":{"token":"task-uid-1")"))
      << "a thrown error must not lose the token of a task already started";
}

TEST_F(SdkPluginTest, ValidateSeesTheAdmissionEnvelope) {
  auto call = host_.call();
  auto create = client_.validate(call, "TestMachine",
                                 R"({"operation":"CREATE","object":{"spec":{"firmware":"efi"}}})");
  EXPECT_TRUE(create.ok()) << create.message;
  auto update = client_.validate(
      call, "TestMachine",
      R"({"operation":"UPDATE","object":{"spec":{"firmware":"bios"}},"oldObject":{"spec":{"firmware":"efi"}}})");
  EXPECT_EQ(update.code, BANLIEUE_INVALID_ARGUMENT);
  EXPECT_EQ(update.reason, "ImmutableField");
  auto bare = client_.validate(call, "TestMachine", R"({"spec":{}})");
  EXPECT_EQ(bare.code, BANLIEUE_INVALID_ARGUMENT);
  EXPECT_THAT(bare.message, HasSubstr("field 'object' must be the TestMachine object"));
}

TEST_F(SdkPluginTest, OutputBeyondTheSinkCapIsRefused) {
  abi::StringSink small(8);
  banlieue_sink sink = small.sink();
  EXPECT_EQ(sink.write(sink.ctx, "12345", 5), 0);
  EXPECT_NE(sink.write(sink.ctx, "67890", 5), 0);
  EXPECT_EQ(small.text(), "12345678");
  EXPECT_TRUE(small.truncated());
}

TEST_F(SdkPluginTest, CancellationIsVisibleToThePlugin) {
  host_.cancelAll();
  auto result = reconcile(R"({"object":{"metadata":{"name":"vm1","uid":"uid-1"}}})");
  EXPECT_EQ(result.code, BANLIEUE_CANCELLED);
  host_.cancelAll(false);
  auto expired = reconcile(R"({"object":{"metadata":{"name":"vm1","uid":"uid-1"}}})",
                           std::chrono::milliseconds(-1));
  EXPECT_EQ(expired.code, BANLIEUE_CANCELLED) << "a passed deadline reads as cancelled";
}

TEST_F(SdkPluginTest, MalformedRequestsAreInvalidArgumentNamingTheField) {
  auto not_json = reconcile("{");
  EXPECT_EQ(not_json.code, BANLIEUE_INVALID_ARGUMENT);
  EXPECT_THAT(not_json.message, HasSubstr("reconcile request is not valid JSON"));
  auto no_object = reconcile(R"({"objects":{}})");
  EXPECT_EQ(no_object.code, BANLIEUE_INVALID_ARGUMENT);
  EXPECT_THAT(no_object.message, HasSubstr("field 'object' must be the TestMachine object"));
  auto call = host_.call();
  auto import = client_.importImage(instance_, call, R"({"artifact":{"format":"raw"}})");
  EXPECT_EQ(import.code, BANLIEUE_INVALID_ARGUMENT);
  EXPECT_THAT(import.message, HasSubstr("'artifact.path' is required"));
}

TEST_F(SdkPluginTest, ThrownErrorsKeepTheirCode) {
  banlieue_instance* other = nullptr;
  auto call = host_.call();
  auto denied = client_.instanceCreate(
      call,
      R"({"provider":{"metadata":{"name":"p"},"spec":{"connection":{"endpoint":"test://"}}},"credentials":{"password":"wrong"}})",
      &other);
  EXPECT_EQ(denied.code, BANLIEUE_UNAUTHENTICATED);
  EXPECT_EQ(denied.reason, "InvalidCredentials");
  EXPECT_EQ(other, nullptr);
}

TEST_F(SdkPluginTest, NullInstanceIsAFailedPreconditionNotACrash) {
  auto call = host_.call();
  auto result = client_.introspect(nullptr, call, "{}");
  EXPECT_EQ(result.code, BANLIEUE_FAILED_PRECONDITION);
}

// Reply::settle() says the machine is at rest: one top-level "settled": true beside status
// and operation, however often it is said; a reply that does not say it has no such member
// (what the host reads as "not settled", as from a plugin built before the field).
TEST(SdkReplyTest, SettleWritesOneTopLevelFlag) {
  Reply reply;
  EXPECT_EQ(json::serialize(reply.body()), "{}");
  reply.status().AddMember("observedPowerState", "PoweredOff", reply.allocator());
  reply.settle();
  reply.settle();
  reply.clearOperation();
  EXPECT_EQ(json::serialize(reply.body()),
            R"({"status":{"observedPowerState":"PoweredOff"},"settled":true,"operation":null})");

  Reply unsettled;
  unsettled.setOperation("task-1");
  EXPECT_EQ(json::serialize(unsettled.body()).find("settled"), std::string::npos);
}

TEST(SdkInitTest, RefusesAForeignHostTable) {
  testing::FakeHost fake;
  banlieue_host_v1 table = *fake.table();
  abi::StringSink error;
  banlieue_sink sink = error.sink();

  table.header.abi_major = 2;
  EXPECT_EQ(test_plugin_static_init(&table, 0, &sink), nullptr);
  EXPECT_THAT(error.text(), HasSubstr("host speaks ABI major 2"));

  table = *fake.table();
  table.header.magic = 0;
  EXPECT_EQ(test_plugin_static_init(&table, 0, &sink), nullptr);

  table = *fake.table();
  table.header.layout_fingerprint ^= 1;
  EXPECT_EQ(test_plugin_static_init(&table, 0, &sink), nullptr);
  EXPECT_THAT(error.text(), HasSubstr("layout fingerprint"));
}

TEST(SdkInitTest, HostHasSeesOnlySlotsInsideTheTable) {
  testing::FakeHost fake;
  banlieue_host_v1 table = *fake.table();
  EXPECT_TRUE(BANLIEUE_HOST_HAS(&table, emit_event));
  table.header.struct_size = offsetof(banlieue_host_v1, emit_event);  // an older, shorter host
  EXPECT_FALSE(BANLIEUE_HOST_HAS(&table, emit_event));
  EXPECT_TRUE(BANLIEUE_HOST_HAS(&table, is_cancelled));
  const banlieue_host_v1* none = nullptr;
  EXPECT_FALSE(BANLIEUE_HOST_HAS(none, log));
}

}  // namespace
}  // namespace banlieue::sdk
