#include "host/runtime/leader_election.h"

#include "host/common/logging.h"
#include "host/common/metrics.h"
#include "host/kube/api_error.h"

#include <banlieue/sdk/json.h>

#include <condition_variable>
#include <ctime>
#include <memory>
#include <random>
#include <thread>

namespace banlieue::runtime {
namespace {

namespace json = sdk::json;

// metav1.MicroTime: RFC 3339 with microseconds, UTC.
std::string microTimeNow() {
  auto now = std::chrono::system_clock::now();
  auto seconds = std::chrono::time_point_cast<std::chrono::seconds>(now);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now - seconds).count();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%06ldZ", static_cast<long>(micros));
  return buf;
}

}  // namespace

LeaderElector::LeaderElector(kube::KubeClient& client, LeaderElectionConfig config, Clock& clock)
    : client_(client), config_(std::move(config)), clock_(clock) {}

std::string LeaderElector::observedHolder() const {
  std::lock_guard lock(mutex_);
  return observed_holder_;
}

bool LeaderElector::tryAcquireOrRenew() {
  ++attempts_;
  auto log = common::logger("leader-election");
  const auto& type = kube::resources::kLease;
  std::string now = microTimeNow();
  int duration_s = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());
  auto current = client_.get(type, config_.lease_namespace, config_.lease_name);
  if (!current.ok()) {
    if (!kube::isNotFound(current.status())) {
      log->warn("get lease {}/{}: {}", config_.lease_namespace, config_.lease_name,
                current.status().message());
      return false;
    }
    std::string lease =
        R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":")" +
        config_.lease_name + R"(","namespace":")" + config_.lease_namespace +
        R"("},"spec":{"holderIdentity":")" + config_.identity + R"(","leaseDurationSeconds":)" +
        std::to_string(duration_s) + R"(,"acquireTime":")" + now + R"(","renewTime":")" + now +
        R"(","leaseTransitions":0}})";
    auto created = client_.create(type, config_.lease_namespace, lease);
    if (!created.ok()) return false;  // someone else created it first
    std::lock_guard lock(mutex_);
    observed_holder_ = config_.identity;
    observed_record_ = config_.identity + "|" + now + "|0";
    observed_time_ = clock_.now();
    return true;
  }

  rapidjson::Document& lease = current.value();
  std::string holder = json::stringOr(&lease, "spec.holderIdentity");
  std::string renew = json::stringOr(&lease, "spec.renewTime");
  int64_t transitions = json::integer(&lease, "spec.leaseTransitions").value_or(0);
  int64_t held_for_s = json::integer(&lease, "spec.leaseDurationSeconds").value_or(duration_s);
  std::string record = holder + "|" + renew + "|" + std::to_string(transitions);
  {
    std::lock_guard lock(mutex_);
    if (record != observed_record_) {
      observed_record_ = record;
      observed_time_ = clock_.now();  // expiry is judged on our clock, from when we saw it change
      if (holder != observed_holder_ && config_.on_new_leader) config_.on_new_leader(holder);
      observed_holder_ = holder;
    }
    bool held_by_other = !holder.empty() && holder != config_.identity;
    if (held_by_other && observed_time_ + std::chrono::seconds(held_for_s) > clock_.now()) {
      return false;  // the holder's lease has not expired yet
    }
  }
  auto& a = lease.GetAllocator();
  auto& spec = lease["spec"];
  auto set = [&](const char* key, rapidjson::Value value) {
    if (spec.HasMember(key)) {
      spec[key] = value;
    } else {
      spec.AddMember(rapidjson::StringRef(key), value, a);
    }
  };
  if (holder != config_.identity) {
    set("leaseTransitions", rapidjson::Value(transitions + 1));
    set("acquireTime", json::stringValue(now, a));
  }
  set("holderIdentity", json::stringValue(config_.identity, a));
  set("leaseDurationSeconds", rapidjson::Value(duration_s));
  set("renewTime", json::stringValue(now, a));
  auto updated =
      client_.update(type, config_.lease_namespace, config_.lease_name, json::serialize(lease));
  if (!updated.ok()) {
    if (!kube::isConflict(updated.status())) {
      log->warn("update lease {}/{}: {}", config_.lease_namespace, config_.lease_name,
                updated.status().message());
    }
    return false;  // a conflict means someone else wrote first: they win this round
  }
  std::lock_guard lock(mutex_);
  observed_holder_ = config_.identity;
  observed_record_ = config_.identity + "|" + now + "|" +
                     std::to_string(json::integer(&*updated, "spec.leaseTransitions").value_or(0));
  observed_time_ = clock_.now();
  return true;
}

bool LeaderElector::waitFor(const std::atomic<bool>& stop, std::chrono::milliseconds period) {
  auto until = clock_.now() + period;
  std::mutex m;
  std::condition_variable cv;
  std::unique_lock lock(m);
  while (!stop.load() && clock_.now() < until) {
    clock_.waitUntil(lock, cv, std::min(until, clock_.now() + std::chrono::milliseconds(100)));
  }
  clock_.forget(cv);
  return !stop.load();
}

void LeaderElector::release() {
  // Bounded like a renewal: a hanging apiserver must not hold a stopping process.
  kube::RequestDeadline bound(config_.renew_deadline);
  auto current = client_.get(kube::resources::kLease, config_.lease_namespace, config_.lease_name);
  if (!current.ok() || json::stringOr(&*current, "spec.holderIdentity") != config_.identity) return;
  auto& a = current->GetAllocator();
  auto& spec = current.value()["spec"];
  spec["holderIdentity"] = rapidjson::Value("", a);
  spec["leaseDurationSeconds"] = rapidjson::Value(1);
  (void)client_.update(kube::resources::kLease, config_.lease_namespace, config_.lease_name,
                       json::serialize(*current));
}

bool LeaderElector::attemptWithin(std::chrono::milliseconds budget) {
  kube::RequestDeadline bound(budget);
  return tryAcquireOrRenew();
}

void LeaderElector::run(const std::atomic<bool>& stop) {
  auto log = common::logger("leader-election");
  static thread_local std::mt19937 rng{std::random_device{}()};
  // Campaign: retry with jitter (client-go: retryPeriod * [1, 1.2)). An acquisition counts from
  // when its attempt began, and is bounded like a renewal, so a slow one leaves less to lead.
  Clock::TimePoint last_renew{};
  while (!stop.load()) {
    last_renew = clock_.now();
    if (attemptWithin(config_.renew_deadline)) break;
    auto jitter = std::chrono::milliseconds(
        static_cast<int64_t>(static_cast<double>(config_.retry_period.count()) *
                             std::uniform_real_distribution<double>(1.0, 1.2)(rng)));
    if (!waitFor(stop, jitter)) return;
  }
  if (stop.load()) return;
  Gauge& leader_gauge = MetricsRegistry::global().gauge(
      "banlieue_leader_election_is_leader", "1 while this process holds the Lease",
      {{"lease", config_.lease_namespace + "/" + config_.lease_name}});
  leading_ = true;
  leader_gauge.set(1);
  log->info("{} became the leader of {}/{}", config_.identity, config_.lease_namespace,
            config_.lease_name);
  if (config_.on_started_leading) config_.on_started_leading();

  // Lead: renew every retry period; give up once renewDeadline has passed since the last
  // successful renewal began. Each attempt runs on its own thread with the time left as its
  // request deadline, and this thread steps down at the deadline even when an attempt is still
  // hanging (an apiserver that accepts connections but never answers): another candidate may
  // take the Lease leaseDuration after it last saw it change, so leading on past renewDeadline
  // would let two leaders act at once.
  struct Attempt {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    bool renewed = false;
    std::thread thread;
  };
  std::unique_ptr<Attempt> hanging;
  while (waitFor(stop, config_.retry_period)) {
    auto deadline = last_renew + config_.renew_deadline;
    auto started = clock_.now();
    if (started >= deadline) {
      log->warn("{} failed to renew {}/{} for {} ms; stepping down", config_.identity,
                config_.lease_namespace, config_.lease_name, config_.renew_deadline.count());
      break;
    }
    auto attempt = std::make_unique<Attempt>();
    auto budget = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - started);
    attempt->thread = std::thread([this, budget, a = attempt.get()] {
      bool renewed = attemptWithin(budget);
      std::lock_guard lock(a->mutex);
      a->done = true;
      a->renewed = renewed;
      a->done_cv.notify_all();
    });
    bool done = false;
    bool renewed = false;
    {
      std::unique_lock lock(attempt->mutex);
      while (!attempt->done && clock_.now() < deadline) {
        clock_.waitUntil(lock, attempt->done_cv,
                         std::min(deadline, clock_.now() + std::chrono::milliseconds(100)));
      }
      clock_.forget(attempt->done_cv);
      done = attempt->done;
      renewed = attempt->renewed;
    }
    if (!done) {
      log->warn(
          "{} could not renew {}/{} within {} ms (the API server does not answer); "
          "stepping down",
          config_.identity, config_.lease_namespace, config_.lease_name,
          config_.renew_deadline.count());
      hanging = std::move(attempt);
      break;
    }
    attempt->thread.join();
    if (renewed) last_renew = started;  // the Lease says renewTime = when the attempt began
  }
  leading_ = false;
  leader_gauge.set(0);
  if (config_.on_stopped_leading) config_.on_stopped_leading();
  // The hanging request ends by its own deadline; only then may the Lease be touched again.
  if (hanging) hanging->thread.join();
  if (stop.load() && !hanging && config_.release_on_cancel) release();
}

}  // namespace banlieue::runtime
