#include "host/plugin/plugin.h"

#include "host/common/metrics.h"

#include <banlieue/sdk/json.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

namespace banlieue::plugin {
namespace {

banlieue_call makeCall(const CallOptions& options, CallState& state) {
  static std::atomic<uint64_t> next_call_id{1};
  state.deadline = std::chrono::steady_clock::now() + options.timeout;
  state.cancel = options.cancel;
  banlieue_call call{};
  call.struct_size = sizeof(banlieue_call);
  call.attempt = options.attempt;
  call.call_id = next_call_id.fetch_add(1, std::memory_order_relaxed);
  call.deadline_unix_ms = HostServices::nowUnixMs() + options.timeout.count();
  call.object_uid = {options.object_uid.data(), options.object_uid.size()};
  call.host_call_ctx = &state;
  return call;
}

// Corrects what a plugin got wrong so nothing malformed reaches a Condition, and records it.
void enforceContract(const char* slot, CallResult& result) {
  auto& o = result.outcome;
  if (!sdk::isKnownCode(o.code)) {
    result.violations.push_back(std::string(slot) + " returned unknown status code " +
                                std::to_string(o.code));
    o.message = "plugin returned unknown status code " + std::to_string(o.code) +
                (o.message.empty() ? "" : ": " + o.message);
    o.code = BANLIEUE_INTERNAL;
    o.reason = "ProviderProtocolError";
  }
  if (o.truncated) {
    result.violations.push_back(std::string(slot) + " wrote more than the sink caps allow");
  }
  if (o.code != BANLIEUE_OK) {
    if (!sdk::isConditionReason(o.reason)) {
      result.violations.push_back(std::string(slot) + " returned " + o.codeName() +
                                  " with reason '" + o.reason + "', which is not CamelCase");
      o.reason = o.code == BANLIEUE_IN_PROGRESS ? "InProgress" : "ProviderError";
    }
    if (o.message.empty() && o.code != BANLIEUE_IN_PROGRESS) {
      result.violations.push_back(std::string(slot) + " returned " + o.codeName() +
                                  " without a message");
      o.message = std::string(slot) + " failed with " + o.codeName();
    }
  }
}

// Seconds: 1 ms to 10 min, from a describe to a long image import.
const std::vector<double> kPluginCallBuckets{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                             2.5,   5,     10,   30,   60,  120,  300, 600};

// Every call the host makes into a plugin, by ABI slot and the code it returned (after
// enforceContract: an unknown code counts as the INTERNAL it became).
void observeCall(const char* slot, const CallResult& result) {
  MetricsRegistry::global()
      .histogram("banlieue_plugin_call_duration_seconds",
                 "Time spent in one plugin call, by ABI slot and result code",
                 {{"slot", slot}, {"code", result.outcome.codeName()}}, kPluginCallBuckets)
      .observe(std::chrono::duration<double>(result.elapsed).count());
}

}  // namespace

template <class Fn>
CallResult Plugin::run(const char* slot, const CallOptions& options, Fn&& fn) const {
  if (options.cancel != nullptr && options.cancel->load()) {
    // The caller is stopping (a lost Lease, a shutdown): a call begun now would act on the
    // backend after its work was told to stop, and would count as a call in flight that keeps
    // the process from campaigning again (roles/common/leadership.h).
    CallResult refused;
    refused.outcome.code = BANLIEUE_CANCELLED;
    refused.outcome.reason = "Cancelled";
    refused.outcome.message = std::string(slot) + " not started: its caller is stopping";
    return refused;
  }
  CallState state;
  banlieue_call call = makeCall(options, state);
  auto started = std::chrono::steady_clock::now();
  CallResult result;
  uint64_t tracked = calls_->begin(slot, options, state.deadline);
  result.outcome = fn(call);
  calls_->end(tracked);
  auto finished = std::chrono::steady_clock::now();
  result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(finished - started);
  if (finished > state.deadline) {
    result.overran =
        std::chrono::duration_cast<std::chrono::milliseconds>(finished - state.deadline);
    result.violations.push_back(std::string(slot) + " returned " +
                                std::to_string(result.overran.count()) + " ms after its deadline");
    services_->logger()->warn(
        "{} returned {} ms after its {} ms deadline (plugin ignores cancellation)", slot,
        result.overran.count(), options.timeout.count());
  }
  enforceContract(slot, result);
  observeCall(slot, result);
  for (const auto& v : result.violations) services_->logger()->warn("contract violation: {}", v);
  return result;
}

Plugin::Plugin(Manifest manifest, sdk::abi::ProviderClient client, HostServices* services)
    : manifest_(std::move(manifest)), client_(client), services_(services) {}

CallResult Plugin::describe(const CallOptions& options) const {
  return run("describe", options,
             [&](const banlieue_call& call) { return client_.describe(call); });
}

CallResult Plugin::validate(std::string_view kind, std::string_view request,
                            const CallOptions& options) const {
  return run("validate", options,
             [&](const banlieue_call& call) { return client_.validate(call, kind, request); });
}

std::unique_ptr<PluginInstance> Plugin::createInstance(std::string_view config,
                                                       const CallOptions& options,
                                                       CallResult& result) const {
  std::lock_guard lock(serialized_);
  banlieue_instance* handle = nullptr;
  result = run("instance_create", options, [&](const banlieue_call& call) {
    return client_.instanceCreate(call, config, &handle);
  });
  if (!result.ok()) {
    if (handle != nullptr) {
      result.violations.push_back("instance_create failed but returned an instance; destroyed it");
      CallState state;
      auto call = makeCall({.timeout = kDestroyTimeout}, state);
      uint64_t tracked = calls_->begin("instance_destroy", {}, state.deadline);
      client_.instanceDestroy(handle, call);
      calls_->end(tracked);
    }
    return nullptr;
  }
  if (handle == nullptr) {
    result.violations.push_back("instance_create returned OK without an instance");
    result.outcome.code = BANLIEUE_INTERNAL;
    result.outcome.reason = "ProviderProtocolError";
    result.outcome.message = "instance_create returned OK without an instance";
    return nullptr;
  }
  return std::make_unique<PluginInstance>(shared_from_this(), handle);
}

PluginInstance::~PluginInstance() {
  // Tracked before the lock: a destroy waiting on a hung create or destroy is stuck as well.
  CallState state;
  auto call = makeCall({.timeout = kDestroyTimeout}, state);
  uint64_t tracked = plugin_->calls_->begin("instance_destroy", {}, state.deadline);
  std::lock_guard lock(plugin_->serialized_);
  plugin_->client_.instanceDestroy(handle_, call);
  plugin_->calls_->end(tracked);
}

CallResult PluginInstance::introspect(std::string_view request, const CallOptions& options) const {
  return plugin_->run("introspect", options, [&](const banlieue_call& call) {
    return plugin_->client_.introspect(handle_, call, request);
  });
}

CallResult PluginInstance::reconcile(std::string_view kind, std::string_view request,
                                     const CallOptions& options) const {
  return plugin_->run("reconcile", options, [&](const banlieue_call& call) {
    return plugin_->client_.reconcile(handle_, call, kind, request);
  });
}

CallResult PluginInstance::finalize(std::string_view kind, std::string_view request,
                                    const CallOptions& options) const {
  return plugin_->run("finalize", options, [&](const banlieue_call& call) {
    return plugin_->client_.finalize(handle_, call, kind, request);
  });
}

CallResult PluginInstance::importImage(std::string_view request, const CallOptions& options) const {
  return plugin_->run("import_image", options, [&](const banlieue_call& call) {
    return plugin_->client_.importImage(handle_, call, request);
  });
}

CallResult PluginInstance::deleteImage(std::string_view request, const CallOptions& options) const {
  return plugin_->run("delete_image", options, [&](const banlieue_call& call) {
    return plugin_->client_.deleteImage(handle_, call, request);
  });
}

CallResult PluginInstance::snapshot(std::string_view request, const CallOptions& options) const {
  return plugin_->run("snapshot", options, [&](const banlieue_call& call) {
    return plugin_->client_.snapshot(handle_, call, request);
  });
}

CallResult PluginInstance::watchChanges(std::string_view request,
                                        const CallOptions& options) const {
  return plugin_->run("watch_changes", options, [&](const banlieue_call& call) {
    return plugin_->client_.watchChanges(handle_, call, request);
  });
}

namespace {

// Whether a console_open that returned OK without a console answered a ticket console: the
// request asked for "webmks" and the reply carries status.url (provider_v1.h, console_open).
bool ticketConsoleAnswered(std::string_view request, const std::string& reply) {
  rapidjson::Document asked;
  asked.Parse(request.data(), request.size());
  if (asked.HasParseError() || sdk::json::stringOr(&asked, "console") != "webmks") return false;
  rapidjson::Document answered;
  answered.Parse(reply.c_str());
  return !answered.HasParseError() && !sdk::json::stringOr(&answered, "status.url").empty();
}

}  // namespace

CallResult PluginInstance::openConsole(std::string_view request,
                                       std::unique_ptr<PluginConsole>& out,
                                       const CallOptions& options) const {
  out.reset();
  banlieue_console* handle = nullptr;
  CallResult result = plugin_->run("console_open", options, [&](const banlieue_call& call) {
    return plugin_->client_.consoleOpen(handle_, call, request, &handle);
  });
  if (!result.ok() && handle != nullptr) {
    // The contract says *out stays NULL on failure; close what came back rather than leak it.
    result.violations.push_back("console_open failed but returned a console; closed it");
    plugin_->client_.consoleClose(handle);
    return result;
  }
  if (result.ok() && handle == nullptr) {
    // A ticket console has no stream: OK without a handle is its answer, with the URL.
    if (ticketConsoleAnswered(request, result.outcome.body)) return result;
    result.violations.push_back("console_open returned OK without a console");
    result.outcome.code = BANLIEUE_INTERNAL;
    result.outcome.reason = "ProviderProtocolError";
    result.outcome.message = "console_open returned OK without a console";
    return result;
  }
  if (handle != nullptr) out = std::make_unique<PluginConsole>(plugin_, handle);
  return result;
}

PluginConsole::~PluginConsole() {
  const std::scoped_lock lock(reading_, writing_);
  plugin_->client().consoleClose(handle_);
}

ConsoleIo PluginConsole::read(size_t max, std::chrono::milliseconds timeout) const {
  const std::lock_guard lock(reading_);
  ConsoleIo io;
  io.data.resize(max);
  size_t n = 0;
  const auto wait = static_cast<int32_t>(
      std::clamp<int64_t>(timeout.count(), 0, std::numeric_limits<int32_t>::max()));
  io.code = plugin_->client().consoleRead(handle_, io.data.data(), max, wait, &n);
  if (n > max) {
    io.violation = "console_read reported " + std::to_string(n) + " bytes into a buffer of " +
                   std::to_string(max);
    n = max;
  }
  io.data.resize(io.code == BANLIEUE_OK ? n : 0);
  return io;
}

ConsoleIo PluginConsole::write(std::string_view data) const {
  const std::lock_guard lock(writing_);
  ConsoleIo io;
  while (io.written < data.size()) {
    size_t n = 0;
    io.code = plugin_->client().consoleWrite(handle_, data.substr(io.written), &n);
    if (io.code != BANLIEUE_OK) break;
    if (n == 0 || n > data.size() - io.written) {
      // Taking nothing would spin here forever; taking more than was given is impossible.
      io.violation = "console_write took " + std::to_string(n) + " of " +
                     std::to_string(data.size() - io.written) + " bytes";
      io.code = BANLIEUE_INTERNAL;
      break;
    }
    io.written += n;
  }
  return io;
}

}  // namespace banlieue::plugin
