#include "host/roles/provider/change_feed.h"

#include "host/common/logging.h"
#include "host/common/metrics.h"
#include "host/common/sleep_unless.h"
#include "host/plugin/payload_schemas.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <thread>

namespace banlieue::roles::provider {

namespace json = sdk::json;
using common::sleepUnless;

namespace {

// What the feed did, for an operator asking whether it follows the backend: answers by kind
// ("first", "changed", "quiet", "all", "failed") and the machines it woke.
void countAnswer(const char* kind) {
  MetricsRegistry::global()
      .counter("banlieue_provider_change_feed_answers_total",
               "watch_changes calls by their answer (first, changed, quiet, all, failed)",
               {{"answer", kind}})
      .inc();
}

void countWoken(size_t machines) {
  MetricsRegistry::global()
      .counter("banlieue_provider_change_feed_woken_total",
               "Machine wakes the change feed asked for (each is one reconcile)")
      .inc(static_cast<double>(machines));
}

}  // namespace

ChangeFeed::ChangeFeed(RuntimeContext& context, ChangeFeedTargets targets,
                       ChangeFeedOptions options)
    : context_(context), targets_(std::move(targets)), options_(options) {}

bool ChangeFeed::covers(std::chrono::steady_clock::time_point recorded) const {
  std::lock_guard lock(mu_);
  return answering_ && following_since_.has_value() && *following_since_ <= recorded;
}

void ChangeFeed::setAnswering(bool answering) {
  std::lock_guard lock(mu_);
  answering_ = answering;
}

void ChangeFeed::restart() {
  std::lock_guard lock(mu_);
  answering_ = false;
  following_since_.reset();
}

std::optional<std::string> ChangeFeed::apply(const std::string& body, bool first) {
  auto log = common::logger("provider");
  if (auto valid = plugin::validatePayload("watch_changes.response", body); !valid.isOk()) {
    log->warn("provider {}/{}: the plugin's watch_changes reply breaks the protocol: {}",
              context_.provider_namespace, context_.provider_name, valid.message());
    return std::nullopt;
  }
  rapidjson::Document reply;
  reply.Parse(body.c_str());
  std::string cursor = json::stringOr(&reply, "cursor");
  if (first) {
    // Changes are those after this answer: a machine seen in sync before it is checked once
    // more at its resync (covers()), not trusted.
    std::lock_guard lock(mu_);
    following_since_ = std::chrono::steady_clock::now();
    answering_ = true;
    log->info("provider {}/{}: following the backend's changes (watch_changes)",
              context_.provider_namespace, context_.provider_name);
    countAnswer("first");
    return cursor;
  }
  setAnswering(true);
  if (json::boolean(&reply, "all", false)) {
    log->info("provider {}/{}: the plugin cannot tell which machines changed: checking all",
              context_.provider_namespace, context_.provider_name);
    countAnswer("all");
    targets_.wake_all();
    return cursor;
  }
  std::set<std::string> changed;
  const auto* ids = json::member(&reply, "changed");  // the schema says: an array of strings
  for (const auto& id : ids->GetArray()) changed.emplace(id.GetString());
  countAnswer(changed.empty() ? "quiet" : "changed");
  if (!changed.empty()) {
    log->debug("provider {}/{}: {} machine(s) changed at the backend", context_.provider_namespace,
               context_.provider_name, changed.size());
    countWoken(changed.size());
    targets_.wake(changed);
  }
  return cursor;
}

void ChangeFeed::run(const std::atomic<bool>& stop) {
  auto log = common::logger("provider");
  int generation = -1;
  std::string cursor;
  bool unsupported = false;
  auto backoff = std::chrono::milliseconds(std::chrono::seconds(1));
  while (!stop) {
    const int current = context_.session.generation();
    auto instance = context_.session.instance();
    if (current != generation) {
      generation = current;
      cursor.clear();
      unsupported = false;
      restart();
    }
    if (!instance || unsupported) {
      sleepUnless(stop, std::chrono::seconds(1));  // until the session has a (new) instance
      continue;
    }
    plugin::CallOptions options =
        context_.callOptions(targets_.provider_uid(), "Provider " + context_.provider_namespace +
                                                          "/" + context_.provider_name);
    options.observes_only = true;  // a long poll in flight must not hold a lost Lease
    const bool first = cursor.empty();
    if (!first) options.timeout = options_.poll;
    rapidjson::Document request(rapidjson::kObjectType);
    request.AddMember("cursor", json::stringValue(cursor, request.GetAllocator()),
                      request.GetAllocator());
    auto result = instance->watchChanges(json::serialize(request), options);
    if (stop) break;
    if (result.code() == BANLIEUE_UNIMPLEMENTED) {
      log->info(
          "provider {}/{}: the plugin has no change feed ({}): each machine at rest is "
          "checked at its resync",
          context_.provider_namespace, context_.provider_name, result.outcome.message);
      unsupported = true;
      restart();
      continue;
    }
    std::optional<std::string> next;
    if (result.ok()) next = apply(result.outcome.body, first);
    if (!next) {
      countAnswer("failed");
      setAnswering(false);  // the resync checks machines again until it answers
      if (!result.ok()) {
        log->warn("provider {}/{}: watch_changes failed ({} {}: {}); retrying in {} ms",
                  context_.provider_namespace, context_.provider_name, result.outcome.codeName(),
                  result.outcome.reason, result.outcome.message, backoff.count());
      }
      sleepUnless(stop, backoff);
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, options_.max_backoff);
      continue;
    }
    backoff = std::chrono::seconds(1);
    cursor = *next;
    // At most one call a second, however fast a plugin answers: changes that come close
    // together go in one answer, and a plugin that does not wait cannot make a hot loop.
    if (auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(result.elapsed);
        !first && spent < std::chrono::seconds(1)) {
      sleepUnless(stop, std::chrono::seconds(1) - spent);
    }
  }
}

}  // namespace banlieue::roles::provider
