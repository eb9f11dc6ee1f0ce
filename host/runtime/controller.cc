#include "host/runtime/controller.h"

#include "host/common/log_context.h"
#include "host/common/logging.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <thread>

namespace banlieue::runtime {
namespace {

namespace json = sdk::json;

EventHandler enqueueWith(const std::function<void(const Object&)>& enqueue) {
  return {enqueue, [enqueue](const Object&, const Object& now) { enqueue(now); }, enqueue};
}

// Members of `a` other than `skip` equal those of `b`, and `b` has no others.
bool equalExcept(const rapidjson::Value& a, const rapidjson::Value& b,
                 std::initializer_list<std::string_view> skip) {
  if (!a.IsObject() || !b.IsObject()) return a == b;
  auto skipped = [&](const rapidjson::Value& name) {
    std::string_view n(name.GetString(), name.GetStringLength());
    return std::find(skip.begin(), skip.end(), n) != skip.end();
  };
  size_t compared = 0;
  for (const auto& member : a.GetObject()) {
    if (skipped(member.name)) continue;
    auto other = b.FindMember(member.name);
    if (other == b.MemberEnd() || !(other->value == member.value)) return false;
    ++compared;
  }
  size_t others = 0;
  for (const auto& member : b.GetObject()) others += skipped(member.name) ? 0 : 1;
  return compared == others;
}

// controller-runtime's reconcile buckets: 5 ms to 60 s.
const std::vector<double> kReconcileBuckets{
    0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
    0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
    6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};

}  // namespace

Controller::Metrics Controller::controllerMetrics(const std::string& name) {
  auto& registry = MetricsRegistry::global();
  auto result = [&](const char* result) {
    return &registry.counter("controller_runtime_reconcile_total",
                             "Total number of reconciliations per controller",
                             {{"controller", name}, {"result", result}});
  };
  MetricLabels labels{{"controller", name}};
  return {
      .success = result("success"),
      .error = result("error"),
      .requeue = result("requeue"),
      .requeue_after = result("requeue_after"),
      .errors = &registry.counter("controller_runtime_reconcile_errors_total",
                                  "Total number of reconciliation errors per controller", labels),
      .terminal_errors = &registry.counter(
          "controller_runtime_terminal_reconcile_errors_total",
          "Total number of terminal reconciliation errors per controller", labels),
      .time = &registry.histogram("controller_runtime_reconcile_time_seconds",
                                  "Length of time per reconciliation per controller", labels,
                                  kReconcileBuckets),
      .active_workers = &registry.gauge("controller_runtime_active_workers",
                                        "Number of currently used workers per controller", labels),
  };
}

bool onlyStatusChanged(const rapidjson::Value& old_object, const rapidjson::Value& new_object) {
  static const rapidjson::Value kEmpty(rapidjson::kObjectType);
  auto metadata = [](const rapidjson::Value& o) -> const rapidjson::Value& {
    if (o.IsObject()) {
      auto m = o.FindMember("metadata");
      if (m != o.MemberEnd()) return m->value;
    }
    return kEmpty;
  };
  return equalExcept(old_object, new_object, {"status", "metadata"}) &&
         equalExcept(metadata(old_object), metadata(new_object),
                     {"resourceVersion", "managedFields"});
}

Request Request::fromKey(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

Controller::Controller(std::string name, Reconciler& reconciler, ControllerOptions options,
                       Clock& clock)
    : name_(std::move(name)),
      reconciler_(reconciler),
      options_(options),
      queue_(clock, name_),
      metrics_(controllerMetrics(name_)) {
  MetricsRegistry::global()
      .gauge("controller_runtime_max_concurrent_reconciles",
             "Maximum number of concurrent reconciles per controller", {{"controller", name_}})
      .set(std::max(1, options_.workers));
}

void Controller::watch(Informer& informer, Updates updates) {
  auto handler = enqueueWith([this](const Object& o) { queue_.add(objectKey(*o)); });
  if (updates == Updates::kIgnoreStatusOnly) {
    handler.on_update = [this](const Object& old_object, const Object& new_object) {
      if (!onlyStatusChanged(*old_object, *new_object)) queue_.add(objectKey(*new_object));
    };
  }
  informer.addHandler(std::move(handler));
}

void Controller::watchOwned(Informer& informer, const std::string& owner_kind) {
  informer.addHandler(enqueueWith([this, owner_kind](const Object& o) {
    const auto* refs = json::find(o.get(), "metadata.ownerReferences");
    if (refs == nullptr || !refs->IsArray()) return;
    std::string ns = json::stringOr(o.get(), "metadata.namespace");
    for (const auto& ref : refs->GetArray()) {
      if (json::stringOr(&ref, "kind") == owner_kind && json::boolean(&ref, "controller")) {
        queue_.add(Request{ns, json::stringOr(&ref, "name")}.key());
      }
    }
  }));
}

void Controller::watchMapped(Informer& informer,
                             std::function<std::vector<std::string>(const Object&)> map) {
  informer.addHandler(enqueueWith([this, map = std::move(map)](const Object& o) {
    for (const auto& key : map(o)) queue_.add(key);
  }));
}

void Controller::handleResult(const std::string& key, const Result& result) {
  auto log = common::logger("controller." + name_);
  if (!result.failed()) {
    queue_.forget(key);
    if (result.requeueAfterDelay().count() > 0) queue_.addAfter(key, result.requeueAfterDelay());
    return;
  }
  ++errors_;
  if (result.terminal()) {
    ++terminal_errors_;
    queue_.forget(key);
    log->warn("{}: {} (not retried until the object changes)", key, result.error().message());
    return;
  }
  log->info("{}: {} (retry {})", key, result.error().message(), queue_.retries(key) + 1);
  queue_.addRateLimited(key);
}

void Controller::worker() {
  while (auto key = queue_.get()) {
    ++reconciles_;
    metrics_.active_workers->add(1);
    Result result;
    auto started = std::chrono::steady_clock::now();
    const Request request = Request::fromKey(*key);
    common::ScopedLogContext context({name_, request.ns, request.name, common::newReconcileId()});
    try {
      result = reconciler_.reconcile(request);
    } catch (const std::exception& e) {
      // A reconciler bug must not take the process down; treat it as a retryable error.
      result = Result::retry(error(Code::kInternal, "ReconcilerException", e.what()));
    }
    metrics_.time->observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    metrics_.active_workers->add(-1);
    if (result.failed()) {
      metrics_.error->inc();
      metrics_.errors->inc();
      if (result.terminal()) metrics_.terminal_errors->inc();
    } else if (result.requeueAfterDelay().count() > 0) {
      metrics_.requeue_after->inc();
    } else {
      metrics_.success->inc();
    }
    handleResult(*key, result);
    queue_.done(*key);
  }
}

void Controller::run(const std::atomic<bool>& stop) {
  std::vector<std::thread> workers;
  for (int i = 0; i < std::max(1, options_.workers); ++i)
    workers.emplace_back([this] { worker(); });
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  queue_.shutDown();  // get() returns nothing once the in-flight keys are done
  for (auto& t : workers) t.join();
}

ControllerStats Controller::stats() const {
  return {reconciles_.load(), errors_.load(), terminal_errors_.load()};
}

}  // namespace banlieue::runtime
