// The loader against real .so variants. Test names carry the version pair they exercise.
#include "host/plugin/loader.h"
#include "host/plugin/payload_schemas.h"
#include "host/plugin/sha256.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include <cstdlib>
#include <fstream>

namespace banlieue::plugin {
namespace {

using ::testing::HasSubstr;

std::filesystem::path pluginRoot() {
  const char* root = std::getenv("BANLIEUE_TEST_PLUGIN_ROOT");
  return root ? root : "";
}

PluginLoader loader() {
  LoadOptions options;
  options.plugin_root = pluginRoot();
  return PluginLoader(options);
}

const char* kConfig =
    R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"p","namespace":"default"},"spec":{"connection":{"endpoint":"test://local"}}},"credentials":{"password":"right"}})";

std::string request(const std::string& uid, const std::string& token = "") {
  std::string r =
      R"({"object":{"apiVersion":"infrastructure.test.banlieue.io/v1beta2","kind":"TestMachine","metadata":{"name":"vm1","namespace":"default","uid":")" +
      uid + R"("}})";
  if (!token.empty()) r += R"(,"operation":{"token":")" + token + "\"}";
  return r + "}";
}

std::unique_ptr<PluginInstance> instanceOf(const Plugin& plugin) {
  CallResult result;
  auto instance = plugin.createInstance(kConfig, {}, result);
  EXPECT_TRUE(result.ok()) << result.outcome.message;
  return instance;
}

void expectRefused(const std::string& variant, Code code, const std::string& reason,
                   const std::string& message_part) {
  auto plugin = loader().load(variant);
  ASSERT_FALSE(plugin.ok()) << variant << " loaded but should not";
  EXPECT_EQ(plugin.status().code(), code) << plugin.status().message();
  EXPECT_EQ(plugin.status().reason(), reason) << plugin.status().message();
  EXPECT_THAT(plugin.status().message(), HasSubstr(message_part));
  EXPECT_THAT(plugin.status().message(), HasSubstr(variant)) << "error must name the file";
}

TEST(LoaderTest, TodaysHostAndPlugin_LoadsAndServesEverySlot) {
  auto plugin = loader().load("current");
  ASSERT_TRUE(plugin.ok()) << plugin.status().message();
  EXPECT_EQ((*plugin)->manifest().name, "testprov");

  auto described = (*plugin)->describe();
  ASSERT_TRUE(described.ok()) << described.outcome.message;
  EXPECT_TRUE(validatePayload("describe.response", described.outcome.body).isOk());
  EXPECT_THAT(described.outcome.body, HasSubstr(R"("kind":"TestMachine")"));

  auto instance = instanceOf(**plugin);
  ASSERT_NE(instance, nullptr);
  auto introspected = instance->introspect(R"({"provider":{"metadata":{"name":"p"}}})");
  ASSERT_TRUE(introspected.ok());
  EXPECT_TRUE(validatePayload("introspect.response", introspected.outcome.body).isOk());
  EXPECT_THAT(introspected.outcome.body, HasSubstr("zone-b"));

  // A long task: IN_PROGRESS with a token, then OK when the token is passed back.
  auto started = instance->reconcile("TestMachine", request("uid-1"), {.object_uid = "uid-1"});
  ASSERT_EQ(started.code(), BANLIEUE_IN_PROGRESS) << started.outcome.message;
  EXPECT_THAT(started.outcome.body, HasSubstr(R"("token":"task-uid-1")"));
  EXPECT_EQ(started.outcome.requeue_after_ms, 10);
  auto done =
      instance->reconcile("TestMachine", request("uid-1", "task-uid-1"), {.object_uid = "uid-1"});
  ASSERT_TRUE(done.ok()) << done.outcome.message;
  EXPECT_THAT(done.outcome.body, HasSubstr(R"("providerID":"test://uid-1")"));
  EXPECT_TRUE(validatePayload("reconcile.response", done.outcome.body).isOk());
  EXPECT_TRUE(done.violations.empty());

  auto finalized = instance->finalize("TestMachine", request("uid-1"));
  EXPECT_TRUE(finalized.ok());

  // SINCE 1.1: delete_image, a two-step task like the backends'.
  const std::string image =
      R"({"image":{"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{"name":"img","uid":"uid-img"}},"failureDomain":"zone-a")";
  auto deleting = instance->deleteImage(image + "}", {.object_uid = "uid-img"});
  ASSERT_EQ(deleting.code(), BANLIEUE_IN_PROGRESS) << deleting.outcome.message;
  EXPECT_THAT(deleting.outcome.body, HasSubstr(R"("token":"delete-img-zone-a")"));
  EXPECT_TRUE(validatePayload("reconcile.response", deleting.outcome.body).isOk());
  auto deleted = instance->deleteImage(image + R"(,"operation":{"token":"delete-img-zone-a"}})",
                                       {.object_uid = "uid-img"});
  EXPECT_TRUE(deleted.ok()) << deleted.outcome.message;
  EXPECT_TRUE(validatePayload("delete_image.request", image + "}").isOk());
  EXPECT_THAT(described.outcome.body, HasSubstr(R"("deleteImage":true)"));

  // SINCE 1.2: snapshot, on the machine reconcile made; create is a two-step task, and
  // idempotent by name.
  const std::string machine =
      R"({"kind":"TestMachine","machine":{"metadata":{"name":"vm1","uid":"uid-1"},"spec":{"providerID":"test://uid-1"}})";
  const std::string snap = R"(,"snapshot":{"name":"before"})";
  auto snapshotting =
      instance->snapshot(machine + R"(,"action":"create")" + snap + "}", {.object_uid = "uid-1"});
  ASSERT_EQ(snapshotting.code(), BANLIEUE_IN_PROGRESS) << snapshotting.outcome.message;
  auto snapshotted = instance->snapshot(
      machine + R"(,"action":"create")" + snap + R"(,"operation":{"token":"snapshot-before"}})",
      {.object_uid = "uid-1"});
  ASSERT_TRUE(snapshotted.ok()) << snapshotted.outcome.message;
  EXPECT_TRUE(validatePayload("snapshot.response", snapshotted.outcome.body).isOk());
  EXPECT_THAT(snapshotted.outcome.body, HasSubstr(R"("snapshotRef":"test://uid-1@before")"));
  auto again =
      instance->snapshot(machine + R"(,"action":"create")" + snap + "}", {.object_uid = "uid-1"});
  EXPECT_TRUE(again.ok()) << "a create of a name that exists finds it: " << again.outcome.message;
  auto listed = instance->snapshot(machine + R"(,"action":"list"})", {.object_uid = "uid-1"});
  EXPECT_THAT(listed.outcome.body, HasSubstr(R"("snapshotRef":"test://uid-1@before")"));
  EXPECT_TRUE(validatePayload("snapshot.request", machine + R"(,"action":"list"})").isOk());
  EXPECT_TRUE(instance
                  ->snapshot(machine + R"(,"action":"delete","snapshotRef":"test://uid-1@before")" +
                                 snap + "}",
                             {.object_uid = "uid-1"})
                  .ok());
  auto gone = instance->snapshot(
      machine + R"(,"action":"revert","snapshotRef":"test://uid-1@before")" + snap + "}",
      {.object_uid = "uid-1"});
  EXPECT_EQ(gone.code(), BANLIEUE_NOT_FOUND);
  EXPECT_EQ(gone.outcome.reason, "SnapshotNotFound");
  auto unknown = instance->snapshot(machine + R"(,"action":"clone")" + snap + "}");
  EXPECT_EQ(unknown.code(), BANLIEUE_INVALID_ARGUMENT);
  EXPECT_THAT(unknown.outcome.message, HasSubstr("action must be create, list, revert or delete"));
  EXPECT_THAT(described.outcome.body, HasSubstr(R"("snapshot":true)"));
}

TEST(LoaderTest, PluginEventsReachTheHostHandler) {
  auto plugin = loader().load("current");
  ASSERT_TRUE(plugin.ok());
  std::vector<PluginEvent> events;
  (*plugin)->services().setEventHandler([&](const PluginEvent& e) { events.push_back(e); });
  auto instance = instanceOf(**plugin);
  auto done = instance->reconcile("TestMachine", request("uid-ev", "task-uid-ev"),
                                  {.object_uid = "uid-ev"});
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].object_uid, "uid-ev");
  EXPECT_EQ(events[0].reason, "Provisioned");
  (*plugin)->services().setEventHandler(nullptr);
}

// A call asked for after its caller's stop flag was set (a provider whose Lease was lost) is
// never made: it would act on the backend after the work was told to stop (issue #26, found
// by the chaos run: the call kept the process from campaigning again).
TEST(LoaderTest, ACallCancelledBeforeItBeginsNeverReachesThePlugin) {
  auto plugin = loader().load("current");
  ASSERT_TRUE(plugin.ok());
  std::vector<PluginEvent> events;
  (*plugin)->services().setEventHandler([&](const PluginEvent& e) { events.push_back(e); });
  auto instance = instanceOf(**plugin);
  std::atomic<bool> stopping{true};
  auto refused = instance->reconcile("TestMachine", request("uid-c", "task-uid-c"),
                                     {.object_uid = "uid-c", .cancel = &stopping});
  EXPECT_EQ(refused.code(), BANLIEUE_CANCELLED) << refused.outcome.message;
  EXPECT_EQ(refused.outcome.reason, "Cancelled");
  // The host's answer, not the plugin's (this plugin checks cancellation itself; one that does
  // not would have run).
  EXPECT_THAT(refused.outcome.message, HasSubstr("not started")) << refused.outcome.message;
  EXPECT_TRUE(events.empty()) << "the plugin ran";
  stopping = false;
  auto done = instance->reconcile("TestMachine", request("uid-c", "task-uid-c"),
                                  {.object_uid = "uid-c", .cancel = &stopping});
  EXPECT_TRUE(done.ok()) << done.outcome.message;
  EXPECT_EQ(events.size(), 1u);
  (*plugin)->services().setEventHandler(nullptr);
}

// A hung instance_destroy (issue #26 item 7) holds the plugin's lock, so a new instance (the
// Provider reconnecting) waits behind it. The destroy is tracked before it takes the lock, so
// the liveness check sees it overdue and the kubelet restarts the process.
TEST(LoaderTest, AHungInstanceDestroyIsOverdueForTheLivenessCheckWhileANewInstanceWaits) {
  auto plugin = loader().load("faulty");
  ASSERT_TRUE(plugin.ok()) << plugin.status().message();
  CallResult created;
  auto instance = (*plugin)->createInstance(
      R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"p"},"spec":{"connection":{"endpoint":"slow-destroy://3"}}}})",
      {}, created);
  ASSERT_TRUE(instance) << created.outcome.message;
  const CallTracker& calls = (*plugin)->calls();
  std::thread destroyer([&] { instance.reset(); });
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (calls.inFlight() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(calls.inFlight(), 1u);
  auto reconnect = std::async(std::launch::async, [&] { return instanceOf(**plugin); });
  EXPECT_EQ(reconnect.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout)
      << "a new instance was made while the old one was still being destroyed";
  // Past the destroy's deadline plus the grace, as the watchdog would see it.
  auto later = std::chrono::steady_clock::now() + kDestroyTimeout + std::chrono::seconds(6);
  auto overdue = calls.overdue(std::chrono::seconds(5), later);
  ASSERT_EQ(overdue.size(), 1u) << calls.describeInFlight();
  EXPECT_EQ(overdue[0].slot, "instance_destroy");
  destroyer.join();
  EXPECT_NE(reconnect.get(), nullptr);
  EXPECT_TRUE(calls.overdue(std::chrono::seconds(5), later).empty());
}

TEST(LoaderTest, PluginErrorsKeepTheirCodeReasonAndMessage) {
  auto plugin = loader().load("current");
  ASSERT_TRUE(plugin.ok());
  CallResult result;
  auto instance = (*plugin)->createInstance(
      R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"p"},"spec":{"connection":{"endpoint":"unreachable://x"}}}})",
      {}, result);
  EXPECT_EQ(instance, nullptr);
  EXPECT_EQ(result.code(), BANLIEUE_UNAVAILABLE);
  EXPECT_EQ(result.outcome.reason, "BackendUnreachable");
  EXPECT_THAT(result.outcome.message, HasSubstr("unreachable://x"));

  auto invalid =
      (*plugin)->validate("TestMachine", R"({"operation":"CREATE","object":{"spec":{"cpus":0}}})");
  EXPECT_EQ(invalid.code(), BANLIEUE_INVALID_ARGUMENT);
  EXPECT_EQ(invalid.outcome.reason, "InvalidCPUCount");

  auto malformed = (*plugin)->validate("TestMachine", R"({"spec":)");
  EXPECT_EQ(malformed.code(), BANLIEUE_INVALID_ARGUMENT);
  EXPECT_EQ(malformed.outcome.reason, "InvalidJson");
}

TEST(LoaderTest, PluginShortTable_MissingSlotsAreNotSupported) {
  auto plugin = loader().load("older_minor");
  ASSERT_TRUE(plugin.ok()) << plugin.status().message();
  EXPECT_EQ((*plugin)->client().table().import_image, nullptr)
      << "slot beyond struct_size must read as NULL";
  EXPECT_EQ((*plugin)->client().table().delete_image, nullptr)
      << "slot beyond struct_size must read as NULL";
  auto instance = instanceOf(**plugin);
  auto result = instance->importImage(R"({"artifact":{"path":"/x","format":"raw"}})");
  EXPECT_EQ(result.code(), BANLIEUE_UNIMPLEMENTED);
  EXPECT_EQ(result.outcome.reason, "NotSupportedByBackend");
  EXPECT_THAT(result.outcome.message, HasSubstr("import_image is not supported by this backend"));
  auto deleted = instance->deleteImage(R"({"failureDomain":"zone-a"})");
  EXPECT_EQ(deleted.code(), BANLIEUE_UNIMPLEMENTED);
  EXPECT_EQ(deleted.outcome.reason, "NotSupportedByBackend");
  EXPECT_EQ((*plugin)->client().table().snapshot, nullptr);
  auto snapshot = instance->snapshot(R"({"action":"list","kind":"TestMachine","machine":{}})");
  EXPECT_EQ(snapshot.code(), BANLIEUE_UNIMPLEMENTED);
  EXPECT_EQ(snapshot.outcome.reason, "NotSupportedByBackend");
  EXPECT_EQ((*plugin)->client().table().console_open, nullptr);
  std::unique_ptr<PluginConsole> console;
  auto opened =
      instance->openConsole(R"({"kind":"TestMachine","machine":{},"console":"serial"})", console);
  EXPECT_EQ(opened.code(), BANLIEUE_UNIMPLEMENTED);
  EXPECT_EQ(opened.outcome.reason, "NotSupportedByBackend");
  EXPECT_THAT(opened.outcome.message, HasSubstr("console is not supported by this backend"));
  EXPECT_EQ(console, nullptr);
  EXPECT_TRUE(instance->finalize("TestMachine", request("u")).ok()) << "earlier slots still work";
}

// SINCE 1.3: a console is a stream, read and written from two threads at once, that outlives
// the call which opened it and ends when the machine stops.
TEST(LoaderTest, AConsoleStreamsBothWaysUntilItEnds) {
  auto plugin = loader().load("current");
  ASSERT_TRUE(plugin.ok());
  auto instance = instanceOf(**plugin);
  const std::string open_request =
      R"({"kind":"TestMachine","machine":{"metadata":{"name":"vm1","uid":"uid-1"},"spec":{"providerID":"test://uid-1"}},"console":"serial"})";
  EXPECT_TRUE(validatePayload("console.request", open_request).isOk());
  std::unique_ptr<PluginConsole> console;
  auto opened = instance->openConsole(open_request, console, {.object_uid = "uid-1"});
  ASSERT_TRUE(opened.ok()) << opened.outcome.message;
  ASSERT_NE(console, nullptr);
  EXPECT_TRUE(validatePayload("console.response", opened.outcome.body).isOk());
  EXPECT_THAT(opened.outcome.body, HasSubstr("echo console of test://uid-1"));

  auto banner = console->read(4096, std::chrono::seconds(2));
  ASSERT_TRUE(banner.ok());
  EXPECT_EQ(banner.data, "test console of test://uid-1\r\n");
  // Nothing more: the read waits as long as asked, and comes back empty.
  auto started = std::chrono::steady_clock::now();
  auto quiet = console->read(4096, std::chrono::milliseconds(100));
  EXPECT_TRUE(quiet.ok());
  EXPECT_TRUE(quiet.data.empty());
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(90));

  // A reader blocked on one thread sees what another thread types (the plugin takes 4 bytes a
  // call: the host writes the rest).
  std::string echoed;
  std::thread reader([&] {
    while (echoed.size() < 11) {
      auto io = console->read(4096, std::chrono::seconds(5));
      if (!io.ok() || io.data.empty()) break;
      echoed += io.data;
    }
  });
  auto typed = console->write("hello world");
  reader.join();
  EXPECT_TRUE(typed.ok());
  EXPECT_EQ(typed.written, 11u);
  EXPECT_EQ(echoed, "hello world");

  // Ctrl-D powers the test VM off: the stream ends, for reads and writes.
  EXPECT_TRUE(console->write("\x04").ok());
  auto ended = console->read(4096, std::chrono::seconds(2));
  EXPECT_TRUE(ended.ended()) << ended.code;
  EXPECT_TRUE(console->write("x").ended());
  console.reset();

  // No backend VM yet: a clear reason, and no console.
  auto early = instance->openConsole(
      R"({"kind":"TestMachine","machine":{"metadata":{"name":"vm2","uid":"uid-2"}},"console":"serial"})",
      console, {.object_uid = "uid-2"});
  EXPECT_EQ(early.code(), BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(early.outcome.reason, "MachineNotProvisioned");
  EXPECT_EQ(console, nullptr);
}

// A ticket console (webmks, a vSphere VM's WebMKS console) has no stream: console_open answers
// OK without a console and the reply's status.url is the answer. The host takes that only for
// webmks and only with a url; OK without a console is otherwise the contract violation it was.
TEST(LoaderTest, OkWithoutAConsoleIsATicketOnlyForWebmksWithAUrl) {
  auto plugin = loader().load("faulty");
  ASSERT_TRUE(plugin.ok()) << plugin.status().message();
  auto instance = instanceOf(**plugin);
  auto open = [&](const std::string& provider_id, const std::string& kind) {
    const std::string request =
        R"({"kind":"TestMachine","machine":{"metadata":{"name":"vm1","uid":"uid-1"},"spec":{"providerID":")" +
        provider_id + R"("}},"console":")" + kind + R"("})";
    EXPECT_TRUE(validatePayload("console.request", request).isOk()) << request;
    std::unique_ptr<PluginConsole> console;
    auto opened = instance->openConsole(request, console, {.object_uid = "uid-1"});
    EXPECT_EQ(console, nullptr) << provider_id << " " << kind;
    return opened;
  };

  // Through the SDK: the test plugin's ticket.
  auto ticket = open("test://uid-1", "webmks");
  ASSERT_TRUE(ticket.ok()) << ticket.outcome.reason << ": " << ticket.outcome.message;
  EXPECT_TRUE(ticket.violations.empty());
  EXPECT_TRUE(validatePayload("console.response", ticket.outcome.body).isOk())
      << ticket.outcome.body;
  EXPECT_THAT(ticket.outcome.body, HasSubstr(R"("url":"wss://127.0.0.1:9/ticket/)"));
  EXPECT_THAT(ticket.outcome.body, HasSubstr(R"("expiresInSeconds":30)"));

  // Past the SDK (the faulty variant's raw console_open): OK and no console for serial, and for
  // webmks without a url, are violations the host stops on.
  for (const auto& [provider_id, kind] :
       {std::pair<std::string, std::string>{"test://ok-without-console", "serial"},
        {"test://ticket-without-url", "webmks"}}) {
    auto bare = open(provider_id, kind);
    EXPECT_EQ(bare.code(), BANLIEUE_INTERNAL) << kind;
    EXPECT_EQ(bare.outcome.reason, "ProviderProtocolError") << kind;
    EXPECT_THAT(bare.violations,
                ::testing::Contains(HasSubstr("console_open returned OK without a console")))
        << kind;
  }
  // The raw slot's well-formed ticket is accepted as the SDK's is.
  auto raw = open("test://ticket-with-url", "webmks");
  EXPECT_TRUE(raw.ok()) << raw.outcome.reason << ": " << raw.outcome.message;
  EXPECT_TRUE(raw.violations.empty());

  // A serial console still opens as a stream.
  std::unique_ptr<PluginConsole> console;
  auto serial = instance->openConsole(
      R"({"kind":"TestMachine","machine":{"metadata":{"name":"vm1","uid":"uid-1"},"spec":{"providerID":"test://uid-1"}},"console":"serial"})",
      console, {.object_uid = "uid-1"});
  EXPECT_TRUE(serial.ok());
  EXPECT_NE(console, nullptr);
}

TEST(LoaderTest, PluginNewerMinor_LoadsAndExtraSlotsAreIgnored) {
  auto plugin = loader().load("newer_minor");
  ASSERT_TRUE(plugin.ok()) << plugin.status().message();
  EXPECT_EQ((*plugin)->client().table().header.abi_minor, BANLIEUE_ABI_MINOR + 3);
  EXPECT_TRUE((*plugin)->describe().ok());
}

TEST(LoaderTest, Manifest1_9_RefusedBeforeDlopen) {
  size_t before = loadedLibraryCount();
  expectRefused(
      "requires_newer_minor", Code::kFailedPrecondition, "AbiMinorTooNew",
      "needs ABI 1.9 or later; this host implements 1." + std::to_string(BANLIEUE_ABI_MINOR));
  EXPECT_EQ(loadedLibraryCount(), before) << "must not dlopen a plugin the manifest rules out";
}

TEST(LoaderTest, Host1_Manifest2_RefusedBeforeDlopen) {
  expectRefused("manifest_wrong_major", Code::kFailedPrecondition, "AbiMajorMismatch",
                "needs ABI major 2; this host speaks major 1");
}

TEST(LoaderTest, Host1_Table2_WrongMajorRefused) {
  expectRefused("wrong_major", Code::kFailedPrecondition, "AbiMajorMismatch",
                "provider table says ABI major 2");
}

TEST(LoaderTest, BadMagicRefused) {
  expectRefused("bad_magic", Code::kFailedPrecondition, "PluginBadMagic",
                "magic 0xDEADBEEF, expected 0x424E4C50");
}

TEST(LoaderTest, LayoutFingerprintMismatchRefused) {
  expectRefused("bad_fingerprint", Code::kFailedPrecondition, "PluginLayoutMismatch",
                "layout fingerprint 0xB1044020");
}

TEST(LoaderTest, MissingEntrySymbolRefused) {
  expectRefused("missing_symbol", Code::kFailedPrecondition, "PluginEntryMissing",
                "does not export banlieue_provider_v1_init");
}

TEST(LoaderTest, InitFailureCarriesThePluginsMessage) {
  expectRefused("init_fails", Code::kFailedPrecondition, "PluginInitFailed",
                "refusing to initialise on purpose");
}

TEST(LoaderTest, ThrowingSlotBecomesInternalWithoutUnwindingIntoTheHost) {
  auto plugin = loader().load("throwing_slot");
  ASSERT_TRUE(plugin.ok());
  auto instance = instanceOf(**plugin);
  auto result = instance->reconcile("TestMachine", request("u"));
  EXPECT_EQ(result.code(), BANLIEUE_INTERNAL);
  EXPECT_EQ(result.outcome.reason, "PluginException");
  EXPECT_THAT(result.outcome.message,
              HasSubstr("reconcile threw: test plugin: reconcile throws on purpose"));
}

TEST(LoaderTest, SlotReturningAfterItsDeadlineIsReported) {
  auto plugin = loader().load("slow_slot");
  ASSERT_TRUE(plugin.ok());
  auto instance = instanceOf(**plugin);
  auto result =
      instance->reconcile("TestMachine", request("u"), {.timeout = std::chrono::milliseconds(100)});
  EXPECT_GT(result.overran.count(), 0);
  ASSERT_FALSE(result.violations.empty());
  EXPECT_THAT(result.violations[0], HasSubstr("after its deadline"));
}

TEST(LoaderTest, MalformedReasonAndMissingMessageAreCorrected) {
  auto plugin = loader().load("bad_reason");
  ASSERT_TRUE(plugin.ok());
  auto instance = instanceOf(**plugin);
  auto result = instance->reconcile("TestMachine", request("u"));
  EXPECT_EQ(result.code(), BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(result.outcome.reason, "ProviderError") << "a Condition reason must be CamelCase";
  EXPECT_FALSE(result.outcome.message.empty());
  EXPECT_EQ(result.violations.size(), 2u);
}

TEST(LoaderTest, RefusesDirectoriesOutsideThePluginRoot) {
  auto elsewhere = std::filesystem::temp_directory_path() / "banlieue-loader-outside";
  std::filesystem::remove_all(elsewhere);
  std::filesystem::create_directories(elsewhere);
  std::filesystem::copy(pluginRoot() / "current", elsewhere / "current",
                        std::filesystem::copy_options::recursive);
  auto plugin = loader().loadDirectory(elsewhere / "current");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().reason(), "PluginOutsideRoot");

  // A symlink inside the root that points outside is just as foreign.
  auto link = pluginRoot() / "escape-link";
  std::filesystem::remove(link);
  std::filesystem::create_directory_symlink(elsewhere / "current", link);
  auto via_link = loader().load("escape-link");
  std::filesystem::remove(link);
  ASSERT_FALSE(via_link.ok());
  EXPECT_EQ(via_link.status().reason(), "PluginOutsideRoot");

  auto traversal = loader().load("../current");
  EXPECT_EQ(traversal.status().reason(), "InvalidPluginName");
  std::filesystem::remove_all(elsewhere);
}

class PinnedPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("banlieue-pin-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    std::filesystem::copy(pluginRoot() / "current", root_ / "pinned",
                          std::filesystem::copy_options::recursive);
    auto digest = sha256File(root_ / "pinned" / "libtestprov.so");
    ASSERT_TRUE(digest.ok());
    digest_ = *digest;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void writeManifest(const std::string& sha) {
    std::ofstream(root_ / "pinned" / "provider.json")
        << R"({"manifestVersion":1,"name":"testprov","library":"libtestprov.so","abi":{"major":1,"minorRequired":0},)"
        << R"("providerVersion":"1.2.3","infrastructure":[{"group":"infrastructure.test.banlieue.io","version":"v1beta2","kind":"TestMachine"}],)"
        << R"("sha256":")" << sha << R"("})";
  }

  std::filesystem::path root_;
  std::string digest_;
};

TEST_F(PinnedPluginTest, MatchingSha256Loads) {
  writeManifest(digest_);
  auto plugin = PluginLoader({.plugin_root = root_}).load("pinned");
  EXPECT_TRUE(plugin.ok()) << plugin.status().message();
}

TEST_F(PinnedPluginTest, ManifestPinMismatchRefused) {
  writeManifest(std::string(64, 'a'));
  auto plugin = PluginLoader({.plugin_root = root_}).load("pinned");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().reason(), "PluginChecksumMismatch");
  EXPECT_THAT(plugin.status().message(), HasSubstr("provider.json pins aaaa"));
  EXPECT_THAT(plugin.status().message(), HasSubstr(digest_));
}

TEST_F(PinnedPluginTest, OperatorPinMismatchRefused) {
  writeManifest(digest_);
  auto plugin =
      PluginLoader({.plugin_root = root_, .expected_sha256 = std::string(64, 'b')}).load("pinned");
  ASSERT_FALSE(plugin.ok());
  EXPECT_THAT(plugin.status().message(), HasSubstr("the operator pins bbbb"));
}

}  // namespace
}  // namespace banlieue::plugin

namespace banlieue::plugin {
namespace {

class TempRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("banlieue-root-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    std::filesystem::permissions(
        root_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                   std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                   std::filesystem::perms::others_exec);
    std::filesystem::copy(pluginRoot() / "current", root_ / "p",
                          std::filesystem::copy_options::recursive);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  StatusOr<std::shared_ptr<Plugin>> load() {
    return PluginLoader({.plugin_root = root_}).load("p");
  }

  std::filesystem::path root_;
};

TEST_F(TempRootTest, LibraryThatIsASymlinkIsRefused) {
  std::filesystem::rename(root_ / "p" / "libtestprov.so", root_ / "p" / "real.so");
  std::filesystem::create_symlink("real.so", root_ / "p" / "libtestprov.so");
  auto plugin = load();
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().reason(), "PluginFileIsSymlink");
}

TEST_F(TempRootTest, WorldWritablePluginDirectoryIsRefused) {
  std::filesystem::permissions(root_ / "p", std::filesystem::perms::others_write,
                               std::filesystem::perm_options::add);
  auto plugin = load();
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().reason(), "PluginDirectoryUntrusted");
  EXPECT_THAT(plugin.status().message(), HasSubstr("writable by group or others"));
}

TEST_F(TempRootTest, GroupWritableLibraryIsRefused) {
  std::filesystem::permissions(root_ / "p" / "libtestprov.so", std::filesystem::perms::group_write,
                               std::filesystem::perm_options::add);
  auto plugin = load();
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().reason(), "PluginFileUntrusted");
}

TEST_F(TempRootTest, OversizedOrHostileManifestIsRefused) {
  std::ofstream(root_ / "p" / "provider.json") << std::string(2 << 20, ' ');
  EXPECT_THAT(load().status().message(), HasSubstr("a manifest may be at most"));
  std::filesystem::remove(root_ / "p" / "provider.json");
  std::filesystem::create_symlink("/etc/passwd", root_ / "p" / "provider.json");
  EXPECT_EQ(load().status().reason(), "PluginFileIsSymlink");
}

TEST_F(TempRootTest, LoadingTheSameLibraryTwiceReturnsTheSamePlugin) {
  auto first = load();
  ASSERT_TRUE(first.ok()) << first.status().message();
  size_t libraries = loadedLibraryCount();
  auto second = load();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->get(), second->get()) << "init must run once per process";
  EXPECT_EQ(loadedLibraryCount(), libraries);
}

TEST_F(TempRootTest, InstancesKeepTheirPluginAlive) {
  std::unique_ptr<PluginInstance> instance;
  {
    auto plugin = load();
    ASSERT_TRUE(plugin.ok());
    instance = instanceOf(**plugin);
  }
  auto finalized = instance->finalize("TestMachine", request("u"));
  EXPECT_TRUE(finalized.ok());
  instance.reset();  // destroys through a plugin nobody else holds any more
}

}  // namespace
}  // namespace banlieue::plugin
