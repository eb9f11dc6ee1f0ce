// A controller: informers feed object keys into a rate-limited work queue; workers hand each
// key to a Reconciler, never two workers for one key. Reconcilers are level-triggered: they
// get only "ns/name", read current state from the cache, and say what should happen next.
#pragma once

#include "host/common/metrics.h"
#include "host/common/status_or.h"
#include "host/runtime/clock.h"
#include "host/runtime/informer.h"
#include "host/runtime/work_queue.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace banlieue::runtime {

struct Request {
  std::string ns;
  std::string name;
  std::string key() const { return ns.empty() ? name : ns + "/" + name; }
  static Request fromKey(const std::string& key);
};

class Result {
 public:
  static Result done() { return Result(); }
  static Result requeueAfter(std::chrono::nanoseconds delay) {
    Result r;
    r.requeue_after_ = delay;
    return r;
  }
  // Retried with per-key exponential backoff.
  static Result retry(Status error) {
    Result r;
    r.error_ = std::move(error);
    return r;
  }
  // Logged, not retried: the object must change first (its watch brings it back).
  static Result terminal(Status error) {
    Result r;
    r.error_ = std::move(error);
    r.terminal_ = true;
    return r;
  }

  bool failed() const { return !error_.isOk(); }
  bool terminal() const { return terminal_; }
  const Status& error() const { return error_; }
  std::chrono::nanoseconds requeueAfterDelay() const { return requeue_after_; }

 private:
  Status error_;
  bool terminal_ = false;
  std::chrono::nanoseconds requeue_after_{0};
};

// True when the two versions of an object differ in nothing but status, resourceVersion and
// managedFields.
bool onlyStatusChanged(const rapidjson::Value& old_object, const rapidjson::Value& new_object);

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  virtual Result reconcile(const Request& request) = 0;
};

struct ControllerOptions {
  int workers = 2;
};

struct ControllerStats {
  uint64_t reconciles = 0;
  uint64_t errors = 0;
  uint64_t terminal_errors = 0;
};

class Controller {
 public:
  Controller(std::string name, Reconciler& reconciler, ControllerOptions options = {},
             Clock& clock = SteadyClock::instance());

  // Which updates of a watched object enqueue it.
  enum class Updates {
    kAll,
    // Not those that change only status (and resourceVersion/managedFields): for objects whose
    // status this controller writes itself and never reads as input. Otherwise a status that
    // changes on every failed attempt (a backend error quoting a timestamp) re-enqueues the key
    // at once and defeats the rate limiter's backoff.
    kIgnoreStatusOnly,
  };

  // Reconcile the objects of this informer (their own keys).
  void watch(Informer& informer, Updates updates = Updates::kAll);
  // Reconcile the owner (controller reference of `owner_kind`) when an owned object changes.
  void watchOwned(Informer& informer, const std::string& owner_kind);
  // Reconcile whatever keys `map` returns for a changed object (e.g. a ProviderClass edit ->
  // every Provider that references it).
  void watchMapped(Informer& informer, std::function<std::vector<std::string>(const Object&)> map);

  void enqueue(const std::string& key) { queue_.add(key); }

  // Runs `workers` threads until `stop` is set, then stops taking keys, lets in-flight
  // reconciles finish and returns.
  void run(const std::atomic<bool>& stop);

  ControllerStats stats() const;
  const WorkQueue& queue() const { return queue_; }

 private:
  void worker();
  void handleResult(const std::string& key, const Result& result);
  // controller-runtime's metrics (names, labels and buckets), so its dashboards and alerts fit.
  struct Metrics {
    Counter* success;
    Counter* error;
    Counter* requeue;  // never: a retry here is an error, a delay a requeue_after
    Counter* requeue_after;
    Counter* errors;
    Counter* terminal_errors;
    Histogram* time;
    Gauge* active_workers;
  };
  static Metrics controllerMetrics(const std::string& name);

  std::string name_;
  Reconciler& reconciler_;
  ControllerOptions options_;
  WorkQueue queue_;
  std::atomic<uint64_t> reconciles_{0}, errors_{0}, terminal_errors_{0};
  Metrics metrics_;
};

}  // namespace banlieue::runtime
