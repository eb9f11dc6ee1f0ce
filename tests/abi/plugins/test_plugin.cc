// One test-plugin source, built into every variant the ABI tests need (see CMakeLists.txt):
// a well-behaved plugin by default, and with TEST_VARIANT_<NAME> defined, one that breaks a
// specific rule. The well-behaved part is also linked statically into unit tests
// (BANLIEUE_TEST_STATIC), the way in-tree plugins get fast tests from the same source.
#ifndef BANLIEUE_TEST_STATIC
#define BANLIEUE_PROVIDER_ENTRY_NAME test_plugin_sdk_init
#endif
#include <banlieue/sdk/plugin.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace {

using banlieue::sdk::Call;
using banlieue::sdk::Capabilities;
using banlieue::sdk::Code;
using banlieue::sdk::DeleteImageRequest;
using banlieue::sdk::Error;
using banlieue::sdk::ImportImageRequest;
using banlieue::sdk::InstanceConfig;
using banlieue::sdk::ReconcileRequest;
using banlieue::sdk::Reply;
using banlieue::sdk::SnapshotRequest;
using banlieue::sdk::Status;
namespace json = banlieue::sdk::json;

#ifdef TEST_VARIANT_SLOW_CREATE
// A backend whose create takes many polls and which throttles callers that poll before the
// interval it asked for, as real APIs do.
struct SlowCreate {
  int polls = 0;
  std::chrono::steady_clock::time_point last;
  bool done = false;
};
std::mutex g_slow_mutex;
std::map<std::string, SlowCreate> g_slow_creates;
constexpr auto kSlowHint = std::chrono::milliseconds(2500);
#endif
#ifdef TEST_VARIANT_NOT_IDEMPOTENT
std::mutex g_vm_mutex;
int g_vms_created = 0;  // every finished create makes another backend VM
#endif

// The test backend's WebMKS ticket: made up, and marked so tests can look for it where a
// ticket must never be (Events, logs).
[[maybe_unused]] std::string testTicket(const std::string& provider_id) {
  return "test-webmks-ticket-" + std::to_string(std::hash<std::string>{}(provider_id) % 100000);
}

// The test backend's serial console: a banner, then an echo of what is typed, as a guest's
// getty echoes; Ctrl-D (0x04) ends the stream, as a guest powering off does.
class EchoConsole final : public banlieue::sdk::Console {
 public:
  explicit EchoConsole(const std::string& vm) : pending_("test console of " + vm + "\r\n") {}

  Status read(char* buf, size_t len, std::chrono::milliseconds timeout, size_t& n) override {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return !pending_.empty() || ended_; });
    n = std::min(len, pending_.size());
    pending_.copy(buf, n);
    pending_.erase(0, n);
    if (n == 0 && ended_) return {Code::kOutOfRange, "ConsoleClosed", "the test VM powered off"};
    return Status::ok();
  }

  Status write(std::string_view data, size_t& n) override {
    std::lock_guard lock(mutex_);
    if (ended_) return {Code::kOutOfRange, "ConsoleClosed", "the test VM powered off"};
    // Takes at most 4 bytes a call, so the host's write loop is exercised.
    n = std::min<size_t>(data.size(), 4);
    for (char c : data.substr(0, n)) {
      if (c == '\x04') {
        ended_ = true;
        break;
      }
      pending_ += c;
    }
    changed_.notify_all();
    return Status::ok();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string pending_;
  bool ended_ = false;
};

class TestInstance final : public banlieue::sdk::Instance {
 public:
  explicit TestInstance(std::string endpoint) : endpoint_(std::move(endpoint)) {}

#ifdef TEST_VARIANT_FAULTY
  // An instance made for the endpoint "slow-destroy://N" takes N seconds to be destroyed,
  // ignoring the destroy call's deadline: a backend logout that hangs.
  void shutdown(const Call&) override {
    constexpr std::string_view kSlowDestroy = "slow-destroy://";
    if (endpoint_.rfind(kSlowDestroy, 0) == 0) {
      std::this_thread::sleep_for(
          std::chrono::seconds(std::stoi(endpoint_.substr(kSlowDestroy.size()))));
    }
  }
#endif

  Status introspect(const Call&, const banlieue::sdk::IntrospectRequest&, Reply& reply) override {
    auto& a = reply.allocator();
    rapidjson::Value fds(rapidjson::kArrayType);
    for (const char* zone : {"zone-a", "zone-b"}) {
      rapidjson::Value fd(rapidjson::kObjectType);
      fd.AddMember("name", json::stringValue(zone, a), a);
      rapidjson::Value labels(rapidjson::kObjectType);
      labels.AddMember("zone", json::stringValue(zone, a), a);
      fd.AddMember("labels", labels, a);
      fds.PushBack(fd, a);
    }
    reply.body().AddMember("failureDomains", fds, a);
    return Status::ok();
  }

  Status reconcile(const Call& call, const ReconcileRequest& request, Reply& reply) override {
#ifdef TEST_VARIANT_THROWING_SLOT
    throw std::runtime_error("test plugin: reconcile throws on purpose");
#endif
#ifdef TEST_VARIANT_CRASHING_SLOT
    volatile int* nowhere = nullptr;
    *nowhere = 42;
#endif
#ifdef TEST_VARIANT_SLOW_SLOT
    // Ignores cancellation: sleeps well past any deadline the tests set (their deadline plus
    // grace is 3.5 s: short deadlines made the other calls of a loaded ASan run time out).
    std::this_thread::sleep_for(std::chrono::seconds(5));
#endif
#ifdef TEST_VARIANT_BAD_REASON
    return Status(Code::kFailedPrecondition, "not camel case", "");
#endif
#ifdef TEST_VARIANT_FAULTY
    // Faults only for the objects that ask for them, so the others show what still works:
    // spec.slowSeconds sleeps ignoring cancellation, spec.hang never returns, spec.crash
    // dereferences NULL.
    if (auto slow = json::integer(request.spec, "slowSeconds"); slow && *slow > 0) {
      BANLIEUE_LOG(kInfo, "slow reconcile of " + request.namespace_ + "/" + request.name);
      std::this_thread::sleep_for(std::chrono::seconds(*slow));
    }
    if (json::boolean(request.spec, "hang")) {
      BANLIEUE_LOG(kInfo, "hanging in reconcile of " + request.namespace_ + "/" + request.name);
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    if (json::boolean(request.spec, "crash")) {
      volatile int* nowhere = nullptr;
      *nowhere = 42;
    }
#endif
    if (request.kind != "TestMachine") {
      return {Code::kInvalidArgument, "UnsupportedKind",
              "the test plugin serves TestMachine, not " + request.kind};
    }
    if (call.cancelled()) return {Code::kCancelled, "Cancelled", "cancelled before starting"};
#ifdef TEST_VARIANT_OK_NO_PROGRESS
    return Status::ok();  // "fine", forever, while nothing is ever created
#endif
#ifdef TEST_VARIANT_NEVER_FINISHES
    reply.setOperation("task-" + request.uid, "creating " + request.name);
    reply.requeueAfter(std::chrono::milliseconds(10));
    return Status::inProgress("Provisioning", "the backend never finishes");
#endif
#ifdef TEST_VARIANT_SLOW_CREATE
    {
      std::lock_guard lock(g_slow_mutex);
      SlowCreate& create = g_slow_creates[request.uid];
      auto now = std::chrono::steady_clock::now();
      if (!create.done) {
        if (create.polls > 0 && create.polls <= 2 && now - create.last < kSlowHint * 9 / 10) {
          return {Code::kResourceExhausted, "PolledTooEarly",
                  "polled before the 2500 ms the backend asked for"};
        }
        create.last = now;
        ++create.polls;
        if (create.polls <= 80) {
          reply.setOperation("task-" + request.uid, "creating " + request.name);
          reply.requeueAfter(create.polls <= 2 ? kSlowHint : std::chrono::milliseconds(10));
          return Status::inProgress("Provisioning", "creating the test VM slowly");
        }
        create.done = true;
      }
      return provisioned(call, request, reply);
    }
#endif
    // A two-step task: the first call starts it, the next one (with the token) finishes it.
    // A token this process did not mint (one from before a restart) is treated as absent.
    bool known_token = request.operation_token && *request.operation_token == "task-" + request.uid;
    if (!known_token) {
      if (json::boolean(request.spec, "failAfterStart")) {
        // The task is started, then the call fails: the token must still reach the host.
        reply.setOperation("task-" + request.uid, "creating " + request.name);
        throw Error(Code::kUnavailable, "BackendBusy",
                    "started the task, then lost the connection");
      }
      reply.setOperation("task-" + request.uid, "creating " + request.name);
      reply.requeueAfter(std::chrono::milliseconds(10));
      return Status::inProgress("Provisioning", "creating the test VM");
    }
    return provisioned(call, request, reply);
  }

  Status provisioned(const Call& call, const ReconcileRequest& request, Reply& reply) {
    auto& a = reply.allocator();
    std::string provider_id = "test://" + request.uid;
#ifdef TEST_VARIANT_NOT_IDEMPOTENT
    {
      std::lock_guard lock(g_vm_mutex);
      provider_id += "/vm-" + std::to_string(++g_vms_created);
    }
#endif
    reply.status().AddMember("providerID", json::stringValue(provider_id, a), a);
    rapidjson::Value init(rapidjson::kObjectType);
    init.AddMember("provisioned", true, a);
    reply.status().AddMember("initialization", init, a);
#ifdef TEST_VARIANT_FAULTY
    // spec.badReply: a reply the protocol forbids (addresses must be a list); spec.badStatus: one
    // the protocol allows and the kind's CRD refuses (the faults test's TestMachine declares
    // status.capacity an integer).
    if (json::boolean(request.spec, "badReply")) {
      reply.status().AddMember("addresses", "not-a-list", a);
    }
    if (json::boolean(request.spec, "badStatus")) reply.status().AddMember("capacity", "lots", a);
    // spec.condition: a condition of the plugin's own of that type; spec.forgeToken and
    // spec.claimReady: fields of the runtime's the protocol refuses from a plugin.
    if (std::string type = json::stringOr(request.spec, "condition"); !type.empty()) {
      reply.setCondition(type, "True", "Answered", "the test backend answered");
    }
    if (json::boolean(request.spec, "forgeToken")) {
      reply.status().AddMember("operationToken", "forged", a);
    }
    if (json::boolean(request.spec, "claimReady")) {
      reply.setCondition("Ready", "True", "SaysThePlugin");
    }
#endif
    if (json::boolean(request.spec, "reportHost")) {
      // What this plugin sees of the host's table: the compatibility tests serve it a 1.0
      // table (no remaining_ms) and a 1.1 one, and read the answer here.
      const banlieue_host_v1* host = banlieue::sdk::host().table();
      rapidjson::Value seen(rapidjson::kObjectType);
      const char* remaining = BANLIEUE_HOST_HAS(host, remaining_ms) ? "present" : "absent";
      seen.AddMember("remainingMs", rapidjson::StringRef(remaining), a);
      seen.AddMember("secondsLeft", static_cast<int64_t>(call.remaining().count() / 1000), a);
      reply.status().AddMember("hostSlots", seen, a);
    }
    call.event(BANLIEUE_EVENT_NORMAL, "Provisioned", "test VM " + request.name + " is running");
    BANLIEUE_LOG(kInfo, "provisioned " + request.namespace_ + "/" + request.name);
    return Status::ok();
  }

  Status finalize(const Call& call, const ReconcileRequest& request, Reply& reply) override {
    if (request.kind != "TestMachine") {
      return {Code::kInvalidArgument, "UnsupportedKind", "not served: " + request.kind};
    }
    return Status::ok();  // nothing left behind, whether or not reconcile ever ran
  }

#ifndef TEST_VARIANT_OLDER_MINOR
  Status importImage(const Call& call, const ImportImageRequest& request, Reply& reply) override {
    if (request.artifact_format != "raw") {
      return {Code::kInvalidArgument, "UnsupportedFormat",
              "only raw images: " + request.artifact_format};
    }
    auto& a = reply.allocator();
    reply.status().AddMember("failureDomain", json::stringValue(request.failure_domain, a), a);
    return Status::ok();
  }

  // A two-step deletion like the backends' (a task, then its result); OK for an image that
  // was never imported, like every backend's.
  Status deleteImage(const Call&, const DeleteImageRequest& request, Reply& reply) override {
    if (request.image_name.rfind("in-use", 0) == 0) {
      return {Code::kFailedPrecondition, "ImageInUse",
              "image " + request.image_name + " is still used by a test VM"};
    }
    std::string task = "delete-" + request.image_name + "-" + request.failure_domain;
    if (request.operation_token != task) {
      reply.setOperation(task, "deleting " + request.image_name);
      reply.requeueAfter(std::chrono::milliseconds(10));
      return Status::inProgress("Deleting", "deleting the test image");
    }
    return Status::ok();
  }

  // Snapshots kept in memory per backend VM (providerID), made in two steps like a backend
  // task; create is idempotent by name, revert and delete name the snapshotRef.
  Status snapshot(const Call&, const SnapshotRequest& request, Reply& reply) override {
    using Action = SnapshotRequest::Action;
    if (request.provider_id.empty()) {
      return {Code::kFailedPrecondition, "MachineNotProvisioned", "the machine has no test VM yet"};
    }
    auto& a = reply.allocator();
    std::lock_guard lock(snapshots_mutex_);
    auto& vm = snapshots_[request.provider_id];  // name -> snapshotRef
    auto find_ref = [&](const std::string& ref) {
      return std::find_if(vm.begin(), vm.end(), [&](const auto& s) { return s.second == ref; });
    };
    switch (request.action) {
      case Action::kCreate: {
        if (request.memory) {
          return {Code::kUnimplemented, "NotSupportedByBackend",
                  "the test backend takes disk-only snapshots"};
        }
        if (vm.count(request.name) == 0) {
          std::string task = "snapshot-" + request.name;
          if (request.operation_token != task) {
            reply.setOperation(task, "snapshotting " + request.provider_id);
            reply.requeueAfter(std::chrono::milliseconds(10));
            return Status::inProgress("Snapshotting", "taking the test snapshot");
          }
          vm[request.name] = request.provider_id + "@" + request.name;
        }
        reply.status().AddMember("snapshotRef", json::stringValue(vm[request.name], a), a);
        return Status::ok();
      }
      case Action::kList: {
        rapidjson::Value list(rapidjson::kArrayType);
        for (const auto& [name, ref] : vm) {
          rapidjson::Value entry(rapidjson::kObjectType);
          entry.AddMember("name", json::stringValue(name, a), a);
          entry.AddMember("snapshotRef", json::stringValue(ref, a), a);
          list.PushBack(entry, a);
        }
        reply.status().AddMember("snapshots", list, a);
        return Status::ok();
      }
      case Action::kRevert:
        if (find_ref(request.snapshot_ref) == vm.end()) {
          return {Code::kNotFound, "SnapshotNotFound",
                  "no snapshot " + request.snapshot_ref + " of " + request.provider_id};
        }
        return Status::ok();
      case Action::kDelete:
        if (auto it = find_ref(request.snapshot_ref); it != vm.end()) vm.erase(it);
        return Status::ok();
    }
    return {Code::kInvalidArgument, "UnknownAction", "unknown snapshot action"};
  }

  Status openConsole(const Call&, const banlieue::sdk::ConsoleRequest& request,
                     std::unique_ptr<banlieue::sdk::Console>& out, Reply& reply) override {
    if (request.provider_id.empty()) {
      return {Code::kFailedPrecondition, "MachineNotProvisioned", "the machine has no test VM yet"};
    }
    auto& a = reply.allocator();
    if (request.console == "webmks") {
      // A ticket console, as vSphere's: no stream, a URL (a credential) and how long it holds.
      reply.status().AddMember("console", "webmks", a);
      reply.status().AddMember(
          "url",
          json::stringValue("wss://127.0.0.1:9/ticket/" + testTicket(request.provider_id), a), a);
      reply.status().AddMember("expiresInSeconds", 30, a);
      reply.status().AddMember("description",
                               json::stringValue("webmks of " + request.provider_id, a), a);
      return Status::ok();
    }
    if (request.console != "serial")
      return banlieue::sdk::unimplemented("console " + request.console);
    out = std::make_unique<EchoConsole>(request.provider_id);
    reply.status().AddMember("console", "serial", a);
    reply.status().AddMember("description",
                             json::stringValue("echo console of " + request.provider_id, a), a);
    return Status::ok();
  }
#endif

 private:
  std::string endpoint_;
  std::mutex snapshots_mutex_;
  std::map<std::string, std::map<std::string, std::string>> snapshots_;
};

class TestProvider final : public banlieue::sdk::Provider {
 public:
  std::string_view name() const override { return "testprov"; }
  std::string_view version() const override { return "1.2.3"; }

  Capabilities capabilities() const override {
    Capabilities caps;
    caps.backend = "test";
    caps.kinds.push_back({"infrastructure.test.banlieue.io",
                          "v1beta2",
                          "TestMachine",
                          {"reconcile", "finalize", "validate"}});
    caps.features = {"vtpm"};
    caps.introspect = true;
#ifndef TEST_VARIANT_OLDER_MINOR
    caps.import_image = true;
    caps.image_formats = {"raw"};
    caps.delete_image = true;
    caps.snapshot = true;
    caps.console = true;
#endif
    return caps;
  }

  Status validate(const Call&, const banlieue::sdk::ValidateRequest& request,
                  Reply& reply) const override {
#ifdef TEST_VARIANT_VALIDATE_UNIMPLEMENTED
    return {Code::kUnimplemented, "NotImplemented", "validation is not written yet"};
#endif
    if (auto cpus = json::integer(request.object, "spec.cpus"); cpus && *cpus < 1) {
      return {Code::kInvalidArgument, "InvalidCPUCount", "spec.cpus must be at least 1"};
    }
    if (request.operation == "UPDATE" && json::stringOr(request.object, "spec.firmware") !=
                                             json::stringOr(request.old_object, "spec.firmware")) {
      return {Code::kInvalidArgument, "ImmutableField", "spec.firmware cannot be changed"};
    }
    return Status::ok();
  }

  std::unique_ptr<banlieue::sdk::Instance> createInstance(const Call&,
                                                          InstanceConfig config) override {
#ifdef TEST_VARIANT_HOLLOW
    throw Error(Code::kUnavailable, "BackendUnreachable", "the hollow plugin never connects");
#endif
    if (config.endpoint.rfind("unreachable://", 0) == 0) {
      throw Error(Code::kUnavailable, "BackendUnreachable", "cannot reach " + config.endpoint);
    }
    if (auto password = config.credentials.get("password"); password && *password == "wrong") {
      throw Error(Code::kUnauthenticated, "InvalidCredentials",
                  "the backend refused the credentials");
    }
    return std::make_unique<TestInstance>(config.endpoint);
  }
};

}  // namespace

BANLIEUE_PROVIDER_PLUGIN(TestProvider)

#ifndef BANLIEUE_TEST_STATIC
// The real export. It wraps the SDK's init so a variant can damage the table it returns.
#ifdef TEST_VARIANT_MISSING_SYMBOL
#define TEST_EXPORT_NAME banlieue_provider_v0_init  // not the symbol the host looks for
#else
#define TEST_EXPORT_NAME banlieue_provider_v1_init
#endif

#if defined(TEST_VARIANT_CONSTRUCTOR_MARKER) || defined(TEST_VARIANT_MISSING_SYMBOL)
#include <cstdio>
#include <cstdlib>
// Shows whether any code of this library ran: a constructor runs the moment the library is
// mapped, before the host could look at anything it exports. It appends a line to the file
// named by BANLIEUE_TEST_CONSTRUCTOR_MARKER (the loader's security tests set it).
__attribute__((constructor)) static void markConstructorRan() {
  const char* marker = std::getenv("BANLIEUE_TEST_CONSTRUCTOR_MARKER");
  if (marker == nullptr) return;
  if (FILE* f = std::fopen(marker, "a")) {
    std::fputs("constructor ran\n", f);
    std::fclose(f);
  }
}
#endif

namespace {
#ifdef TEST_VARIANT_KEEPS_BORROWED
// The contract breach: the request pointer is kept past the call and read on the next one.
// The host frees its request buffer after each call, so ASan reports heap-use-after-free.
const char* g_kept_request = nullptr;
size_t g_kept_len = 0;
decltype(banlieue_provider_v1::reconcile) g_sdk_reconcile = nullptr;

banlieue_status keepingReconcile(banlieue_instance* instance, const banlieue_call* call,
                                 banlieue_str kind, banlieue_str request, banlieue_reply* reply) {
  if (g_kept_request != nullptr) {
    volatile char checksum = 0;
    for (size_t i = 0; i < g_kept_len; ++i) checksum = checksum ^ g_kept_request[i];
  }
  g_kept_request = request.data;
  g_kept_len = request.len;
  return g_sdk_reconcile(instance, call, kind, request, reply);
}
#endif

#ifdef TEST_VARIANT_FAULTY
// console_open past the SDK, for the objects that ask for it by their providerID: OK without a
// console for a serial console ("test://ok-without-console"), for a webmks one without a url
// ("test://ticket-without-url") and with one ("test://ticket-with-url"). The SDK refuses to
// answer the first two; the host must refuse them from any plugin.
decltype(banlieue_provider_v1::console_open) g_sdk_console_open = nullptr;

banlieue_status rawConsoleOpen(banlieue_instance* instance, const banlieue_call* call,
                               banlieue_str request, banlieue_console** out,
                               banlieue_reply* reply) {
  const std::string_view text(request.data, request.len);
  auto answer = [&](std::string_view body) {
    *out = nullptr;
    reply->body.write(reply->body.ctx, body.data(), body.size());
    return BANLIEUE_OK;
  };
  if (text.find("test://ok-without-console") != std::string_view::npos) {
    return answer(R"({"status":{"console":"serial"}})");
  }
  if (text.find("test://ticket-without-url") != std::string_view::npos) {
    return answer(R"({"status":{"console":"webmks"}})");
  }
  if (text.find("test://ticket-with-url") != std::string_view::npos) {
    return answer(
        R"({"status":{"console":"webmks","url":"wss://127.0.0.1:9/ticket/raw","expiresInSeconds":5}})");
  }
  return g_sdk_console_open(instance, call, request, out, reply);
}
#endif

struct LongerTable {  // a table from a future minor with three more slots
  banlieue_provider_v1 v1;
  void (*future_slots[3])(void);
};
}  // namespace

extern "C" __attribute__((visibility("default"))) const banlieue_provider_v1* TEST_EXPORT_NAME(
    const banlieue_host_v1* host, uint32_t host_minor, const banlieue_sink* error) {
#ifdef TEST_VARIANT_INIT_FAILS
  const char message[] = "test plugin: refusing to initialise on purpose";
  error->write(error->ctx, message, sizeof(message) - 1);
  return nullptr;
#endif
  const banlieue_provider_v1* base = test_plugin_sdk_init(host, host_minor, error);
  if (base == nullptr) return nullptr;
  static LongerTable table{};
  std::memcpy(&table.v1, base, sizeof(banlieue_provider_v1));
#ifdef TEST_VARIANT_OLDER_MINOR
  // As a plugin built before import_image existed: its table ends just before that slot.
  table.v1.header.struct_size = offsetof(banlieue_provider_v1, import_image);
  table.v1.import_image = reinterpret_cast<decltype(table.v1.import_image)>(0x1);  // never read
  table.v1.delete_image = reinterpret_cast<decltype(table.v1.delete_image)>(0x1);  // never read
  table.v1.snapshot = reinterpret_cast<decltype(table.v1.snapshot)>(0x1);          // never read
  table.v1.console_open = reinterpret_cast<decltype(table.v1.console_open)>(0x1);  // never read
#endif
#ifdef TEST_VARIANT_NEWER_MINOR
  table.v1.header.abi_minor = BANLIEUE_ABI_MINOR + 3;
  table.v1.header.struct_size = sizeof(LongerTable);
#endif
#ifdef TEST_VARIANT_KEEPS_BORROWED
  g_sdk_reconcile = table.v1.reconcile;
  table.v1.reconcile = &keepingReconcile;
#endif
#ifdef TEST_VARIANT_FAULTY
  g_sdk_console_open = table.v1.console_open;
  table.v1.console_open = &rawConsoleOpen;
#endif
#ifdef TEST_VARIANT_HOLLOW
  // describe still claims reconcile, finalize and importImage.
  table.v1.reconcile = nullptr;
  table.v1.finalize = nullptr;
  table.v1.import_image = nullptr;
  table.v1.delete_image = nullptr;
  table.v1.snapshot = nullptr;
  table.v1.console_open = nullptr;
#endif
#ifdef TEST_VARIANT_WRONG_MAJOR
  table.v1.header.abi_major = 2;
#endif
#ifdef TEST_VARIANT_BAD_MAGIC
  table.v1.header.magic = 0xDEADBEEF;
#endif
#ifdef TEST_VARIANT_BAD_FINGERPRINT
  table.v1.header.layout_fingerprint = 0xB1044020;  // what a 32-bit build would report
#endif
  return &table.v1;
}

#ifdef TEST_VARIANT_EXTRA_EXPORT
// A second exported function (its own version script lets it out): something the host or
// another plugin could bind to by accident.
extern "C" __attribute__((visibility("default"))) int banlieue_test_extra_export() {
  return 42;
}
#endif
#endif
