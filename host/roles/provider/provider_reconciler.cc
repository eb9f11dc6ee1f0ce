#include "host/roles/provider/provider_reconciler.h"

#include "host/common/logging.h"
#include "host/plugin/payload_schemas.h"
#include "host/plugin/status_policy.h"
#include "host/roles/provider/connection_inputs.h"
#include "host/roles/provider/status_writer.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;

const kube::ResourceType kProviders{"banlieue.io", "v1alpha1", "providers", true};

// How soon a pass that the apiserver did not answer is tried again.
constexpr std::chrono::seconds kUnansweredRetry{5};

// When to try again after a failure, by the error table: transient errors soon, terminal ones
// (wrong credentials, bad settings) at the credentials poll, since the fix is an edit of a
// Secret or of the Provider that the next poll or watch event picks up.
std::chrono::seconds retryDelay(const Status& failure, std::chrono::seconds poll) {
  auto policy = plugin::policyFor(static_cast<banlieue_status>(failure.code()));
  if (policy.disposition == plugin::Disposition::kTerminal) return poll;
  return std::chrono::seconds(5);
}

}  // namespace

ProviderReconciler::ProviderReconciler(RuntimeContext& context, runtime::Informer& providers,
                                       ProviderReconcilerOptions options)
    : context_(context), providers_(providers), options_(options) {}

bool ProviderReconciler::connected() const {
  std::lock_guard lock(mu_);
  return connected_;
}

runtime::Result ProviderReconciler::reconcile(const runtime::Request& request) {
  auto provider = providers_.get(request.key());
  if (!provider || request.ns != context_.provider_namespace ||
      request.name != context_.provider_name) {
    return runtime::Result::done();
  }
  const rapidjson::Value& p = *provider;
  const bool deleting = json::find(&p, "metadata.deletionTimestamp") != nullptr;

  // Connected even while the Provider is being deleted: its infrastructure objects are being
  // finalized, which needs the backend (docs/adr/0024), and this process may have started
  // after the deletion did (a restarted pod).
  auto inputs = readConnectionInputs(context_.client, p);
  if (!inputs.ok() && !inputsFailureIsAnAnswer(inputs.status())) {
    // The apiserver did not answer: the instance connected with the last inputs read keeps
    // serving the machines (their own requests fail meanwhile or not), and there is no status
    // to write. Read again soon, not after a back-off that grows with the outage.
    common::logger("provider")
        ->warn(
            "provider {}/{}: cannot read the connection inputs now ({}); keeping the current "
            "connection, reading again in {} s",
            context_.provider_namespace, context_.provider_name, inputs.status().message(),
            kUnansweredRetry.count());
    return runtime::Result::requeueAfter(kUnansweredRetry);
  }
  if (!inputs.ok()) {
    context_.session.disconnect();
    return report(p, inputs.status(), nullptr);
  }
  auto uid = json::stringOr(&p, "metadata.uid");
  if (auto s = context_.session.connect(*inputs, context_.callOptions(uid)); !s.isOk()) {
    return report(p, s, nullptr);
  }
  if (deleting) {
    // No more failure domains to publish: the operator removes the workload once the objects
    // are gone. The credentials are still checked, as they may rotate meanwhile.
    return runtime::Result::requeueAfter(options_.credentials_poll);
  }

  // Walk the backend when the instance or the Provider changed, a walk is in progress, or the
  // interval passed; otherwise this pass only checked the credentials.
  int session_generation = context_.session.generation();
  int64_t object_generation = json::integer(&p, "metadata.generation").value_or(0);
  auto now = std::chrono::steady_clock::now();
  std::optional<std::string> token;
  {
    std::lock_guard lock(mu_);
    bool due = session_generation != introspected_generation_ ||
               object_generation != introspected_object_generation_ || walk_token_.has_value() ||
               now - last_introspect_ >= options_.introspect_interval;
    if (!due) {
      // Tests count these lines: each proves a pass at rest happened (and wrote nothing).
      common::logger("provider")
          ->debug("provider {}/{}: credentials checked, introspection not due",
                  context_.provider_namespace, context_.provider_name);
      return runtime::Result::requeueAfter(options_.credentials_poll);
    }
    token = walk_token_;
  }

  auto instance = context_.session.instance();
  if (!instance) return runtime::Result::requeueAfter(std::chrono::seconds(1));
  rapidjson::Document call(rapidjson::kObjectType);
  auto& a = call.GetAllocator();
  call.AddMember("provider", rapidjson::Value(p, a), a);
  if (token) {
    rapidjson::Value op(rapidjson::kObjectType);
    op.AddMember("token", json::stringValue(*token, a), a);
    call.AddMember("operation", op, a);
  }
  auto result = instance->introspect(json::serialize(call), context_.callOptions(uid));
  if (result.code() == BANLIEUE_IN_PROGRESS) {
    rapidjson::Document body;
    body.Parse(result.outcome.body.c_str());
    std::lock_guard lock(mu_);
    walk_token_ = json::stringOr(&body, "operation.token");
    return runtime::Result::requeueAfter(
        plugin::clampRequeueHint(result.outcome.requeue_after_ms, plugin::kDefaultPollInterval));
  }
  {
    std::lock_guard lock(mu_);
    walk_token_.reset();
  }
  if (!result.ok()) return report(p, statusOf(result), nullptr);
  if (auto valid = plugin::validatePayload("introspect.response", result.outcome.body);
      !valid.isOk()) {
    return report(p,
                  error(Code::kInternal, "ProviderProtocolError",
                        "the plugin's introspect reply breaks the protocol: " + valid.message()),
                  nullptr);
  }
  rapidjson::Document body;
  body.Parse(result.outcome.body.c_str());
  {
    std::lock_guard lock(mu_);
    introspected_generation_ = session_generation;
    introspected_object_generation_ = object_generation;
    last_introspect_ = now;
  }
  return report(p, Status::ok(), json::member(&body, "failureDomains"));
}

runtime::Result ProviderReconciler::report(const rapidjson::Value& provider, const Status& failure,
                                           const rapidjson::Value* failure_domains) {
  int64_t generation = json::integer(&provider, "metadata.generation").value_or(0);
  const auto* current = json::find(&provider, "status");
  rapidjson::Document status(rapidjson::kObjectType);
  auto& a = status.GetAllocator();

  std::vector<runtime::Condition> conditions;
  if (failure.isOk()) {
    size_t count = failure_domains != nullptr && failure_domains->IsArray()
                       ? failure_domains->GetArray().Size()
                       : 0;
    conditions.push_back({"ProviderReachable", "True", "Connected",
                          "the " + context_.backend + " plugin is connected to the backend",
                          generation});
    if (count == 0) {
      conditions.push_back({"Ready", "False", "NoFailureDomains",
                            "the backend reported no usable failure domain", generation});
    } else {
      conditions.push_back(
          {"Ready", "True", "Ready",
           std::to_string(count) + " failure domain" + (count == 1 ? "" : "s") + " verified",
           generation});
    }
    status.AddMember("failureDomains",
                     failure_domains != nullptr && failure_domains->IsArray()
                         ? rapidjson::Value(*failure_domains, a)
                         : rapidjson::Value(rapidjson::kArrayType),
                     a);
  } else {
    conditions.push_back(
        {"ProviderReachable", "False", failure.reason(), failure.message(), generation});
    conditions.push_back({"Ready", "False", failure.reason(), failure.message(), generation});
    // Keep the last verified failure domains: a backend that is briefly unreachable should not
    // make every VM unschedulable; Ready=False tells the scheduler not to pick it.
    const auto* kept = current != nullptr ? json::member(current, "failureDomains") : nullptr;
    status.AddMember("failureDomains",
                     kept != nullptr && kept->IsArray() ? rapidjson::Value(*kept, a)
                                                        : rapidjson::Value(rapidjson::kArrayType),
                     a);
  }
  status.AddMember(
      "conditions",
      mergeConditions(current != nullptr ? json::member(current, "conditions") : nullptr,
                      conditions, a),
      a);
  status.AddMember("observedGeneration", generation, a);

  auto written =
      applyStatusIfChanged(context_.client, kProviders, provider, status, context_.fieldManager());
  bool was_connected = connected();
  {
    std::lock_guard lock(mu_);
    connected_ = failure.isOk();
  }
  if (written.ok() && *written) {
    if (failure.isOk() && !was_connected) {
      context_.events.normal(provider, "Connected", "Introspect",
                             "connected; " +
                                 std::to_string(status["failureDomains"].GetArray().Size()) +
                                 " failure domain(s) verified");
    } else if (!failure.isOk()) {
      context_.events.warning(provider, failure.reason(), "Connect", failure.message());
    }
  }
  // An apiserver that does not take the status: again soon, without a back-off that grows
  // with the outage (one object; the connection above does not depend on this write).
  if (!written.ok()) return runtime::Result::requeueAfter(kUnansweredRetry);
  if (!failure.isOk()) {
    common::logger("provider")
        ->warn("provider {}/{}: {}: {}", context_.provider_namespace, context_.provider_name,
               failure.reason(), failure.message());
    return runtime::Result::requeueAfter(retryDelay(failure, options_.credentials_poll));
  }
  return runtime::Result::requeueAfter(options_.credentials_poll);
}

}  // namespace banlieue::roles::provider
