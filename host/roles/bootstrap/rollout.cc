#include "host/roles/bootstrap/rollout.h"

#include "host/kube/api_error.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <optional>

namespace banlieue::roles::bootstrap {
namespace {

namespace json = sdk::json;

int64_t count(const rapidjson::Value& object, std::string_view path) {
  return json::integer(&object, path).value_or(0);
}

std::string plural(int64_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

const rapidjson::Value* conditions(const rapidjson::Value& object) {
  const auto* list = json::find(&object, "status.conditions");
  return list != nullptr && list->IsArray() ? list : nullptr;
}

// "Type=Status (Reason: message)" for each condition that is not True.
std::string unreadyConditions(const rapidjson::Value& object) {
  std::string out;
  const auto* list = conditions(object);
  if (list == nullptr) return out;
  for (const auto& c : list->GetArray()) {
    std::string status = json::stringOr(&c, "status");
    if (status == "True") continue;
    if (!out.empty()) out += ", ";
    out += json::stringOr(&c, "type") + "=" + status;
    std::string reason = json::stringOr(&c, "reason");
    std::string message = json::stringOr(&c, "message");
    if (!reason.empty() || !message.empty()) {
      out += " (";
      out += reason;
      if (!reason.empty() && !message.empty()) out += ": ";
      out += message;
      out += ")";
    }
  }
  return out;
}

// Why a pod is not ready, from its first container that is not: "pod p: container c waiting:
// ErrImagePull (message)". Empty when nothing says.
std::string podTrouble(const rapidjson::Value& pod) {
  std::string name = "pod " + json::stringOr(&pod, "metadata.name");
  for (const char* list_name : {"status.initContainerStatuses", "status.containerStatuses"}) {
    const auto* list = json::find(&pod, list_name);
    if (list == nullptr || !list->IsArray()) continue;
    for (const auto& c : list->GetArray()) {
      if (json::boolean(&c, "ready")) continue;
      std::string container = ": container " + json::stringOr(&c, "name");
      for (const char* state : {"waiting", "terminated"}) {
        const auto* s = json::find(&c, std::string("state.") + state);
        if (s == nullptr || !s->IsObject()) continue;
        std::string reason = json::stringOr(s, "reason");
        std::string message = json::stringOr(s, "message");
        std::string text = name;
        text += container;
        text += " ";
        text += state;
        text += ": ";
        text += reason;
        if (!message.empty()) text += " (" + message + ")";
        return text;
      }
      if (json::find(&c, "state.running") != nullptr) {
        return name + container + " running, not ready (readiness probe)";
      }
    }
  }
  // Not scheduled, or no container status yet.
  std::string reasons = unreadyConditions(pod);
  if (!reasons.empty()) return name + ": " + reasons;
  std::string phase = json::stringOr(&pod, "status.phase");
  return phase.empty() ? "" : name + ": " + phase;
}

// The trouble of the first unready pod the Deployment selects, "" when none is found.
std::string firstPodTrouble(kube::KubeClient& client, const std::string& ns,
                            const rapidjson::Value& deployment) {
  const auto* labels = json::find(&deployment, "spec.selector.matchLabels");
  if (labels == nullptr || !labels->IsObject() || labels->MemberCount() == 0) return "";
  std::string selector;
  for (const auto& m : labels->GetObject()) {
    if (!m.value.IsString()) continue;
    if (!selector.empty()) selector += ",";
    selector += std::string(m.name.GetString()) + "=" + m.value.GetString();
  }
  auto pods = client.list(kube::resources::kPod, ns, {.label_selector = selector});
  if (!pods.ok()) return "";
  const auto* items = json::member(&*pods, "items");
  if (items == nullptr || !items->IsArray()) return "";
  for (const auto& pod : items->GetArray()) {
    std::string trouble = podTrouble(pod);
    if (!trouble.empty()) return trouble;
  }
  return "";
}

class RolloutWaiter {
 public:
  RolloutWaiter(kube::KubeClient& client, const DeploymentRef& ref,
                std::chrono::steady_clock::time_point deadline, std::chrono::seconds timeout,
                std::ostream& progress)
      : client_(client), ref_(ref), deadline_(deadline), timeout_(timeout), progress_(progress) {}

  Status wait() {
    const std::string selector = "metadata.name=" + ref_.name;
    while (true) {
      auto list = client_.list(kube::resources::kDeployment, ref_.ns, {.field_selector = selector});
      if (!list.ok()) return list.status();
      const auto* items = json::member(&*list, "items");
      if (items == nullptr || !items->IsArray() || items->Empty()) {
        return error(Code::kNotFound, "NotFound",
                     "deployment " + ref_.display() + " does not exist");
      }
      if (auto s = observe((*items)[0]); s) return *s;
      if (std::chrono::steady_clock::now() >= deadline_) return timedOut();

      kube::WatchOptions options;
      options.resource_version = json::stringOr(&*list, "metadata.resourceVersion");
      options.field_selector = selector;
      options.timeout_seconds = secondsLeft();
      std::optional<Status> outcome;
      Status watched = client_.watch(
          kube::resources::kDeployment, ref_.ns, options, [&](kube::WatchEvent& event) {
            if (event.type == "ADDED" || event.type == "MODIFIED") {
              outcome = observe(event.object);
            } else if (event.type == "DELETED") {
              outcome = error(Code::kNotFound, "NotFound",
                              "deployment " + ref_.display() + " was deleted while waiting");
            } else if (event.type == "ERROR" && count(event.object, "code") != 410) {
              outcome = error(Code::kUnavailable, json::stringOr(&event.object, "reason"),
                              "watching deployment " + ref_.display() + ": " +
                                  json::stringOr(&event.object, "message"));
            } else if (event.type == "ERROR") {
              return false;  // too old a resourceVersion: list again
            }
            return !outcome && std::chrono::steady_clock::now() < deadline_;
          });
      if (outcome) return *outcome;
      if (!watched.isOk() && !kube::isGone(watched)) return watched;
      if (std::chrono::steady_clock::now() >= deadline_) return timedOut();
    }
  }

 private:
  // Reports a change of progress; a Status once the rollout is over either way.
  std::optional<Status> observe(const rapidjson::Value& deployment) {
    latest_.CopyFrom(deployment, latest_.GetAllocator());
    auto status = rolloutStatus(deployment);
    if (status.done) {
      progress_ << "deployment " << ref_.display() << " rolled out: " << status.progress << "\n";
      progress_.flush();
      return Status::ok();
    }
    if (status.failed) {
      return error(Code::kFailedPrecondition, "ProgressDeadlineExceeded",
                   "deployment " + ref_.display() + " exceeded its progress deadline: " +
                       status.progress + "; " + status.unready + troubleSuffix());
    }
    if (status.progress != last_progress_) {
      progress_ << "waiting for deployment " << ref_.display() << ": " << status.progress << "\n";
      progress_.flush();
      last_progress_ = status.progress;
    }
    return std::nullopt;
  }

  Status timedOut() {
    std::string message = "deployment " + ref_.display() + " did not roll out within " +
                          std::to_string(timeout_.count()) + "s";
    if (latest_.IsObject()) {
      auto status = rolloutStatus(latest_);
      message += ": " + status.progress;
      if (!status.unready.empty()) message += "; " + status.unready;
      message += troubleSuffix();
    }
    return error(Code::kDeadlineExceeded, "RolloutTimeout", message);
  }

  std::string troubleSuffix() {
    std::string trouble = firstPodTrouble(client_, ref_.ns, latest_);
    return trouble.empty() ? "" : "; " + trouble;
  }

  int secondsLeft() const {
    auto left =
        std::chrono::ceil<std::chrono::seconds>(deadline_ - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(1, left.count()));
  }

  kube::KubeClient& client_;
  const DeploymentRef& ref_;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::seconds timeout_;
  std::ostream& progress_;
  rapidjson::Document latest_;
  std::string last_progress_;
};

}  // namespace

RolloutStatus rolloutStatus(const rapidjson::Value& deployment) {
  RolloutStatus out;
  out.unready = unreadyConditions(deployment);
  if (const auto* list = conditions(deployment)) {
    for (const auto& c : list->GetArray()) {
      if (json::stringOr(&c, "type") == "Progressing" &&
          json::stringOr(&c, "reason") == "ProgressDeadlineExceeded") {
        out.failed = true;
      }
    }
  }
  if (count(deployment, "metadata.generation") > count(deployment, "status.observedGeneration")) {
    out.progress = "spec change not yet observed";
    return out;
  }
  // spec.replicas defaults to 1 on the server; a missing one in an object read back is 1.
  const int64_t wanted = json::integer(&deployment, "spec.replicas").value_or(1);
  const int64_t replicas = count(deployment, "status.replicas");
  const int64_t updated = count(deployment, "status.updatedReplicas");
  const int64_t ready = count(deployment, "status.readyReplicas");
  const int64_t available = count(deployment, "status.availableReplicas");
  out.progress = std::to_string(ready) + "/" + std::to_string(wanted) + " ready";
  if (updated < wanted) {
    out.progress += ", " + std::to_string(updated) + "/" + std::to_string(wanted) + " updated";
  }
  if (replicas > updated) {
    out.progress += ", " + plural(replicas - updated, "old replica") + " pending termination";
  }
  out.done = !out.failed && updated >= wanted && replicas <= updated && available >= updated;
  return out;
}

std::vector<DeploymentRef> deploymentsOf(const std::vector<rapidjson::Document>& objects) {
  std::vector<DeploymentRef> out;
  for (const auto& object : objects) {
    if (json::stringOr(&object, "kind") != "Deployment") continue;
    out.push_back(
        {json::stringOr(&object, "metadata.namespace"), json::stringOr(&object, "metadata.name")});
  }
  return out;
}

Status waitForRollouts(kube::KubeClient& client, const std::vector<DeploymentRef>& deployments,
                       std::chrono::seconds timeout, std::ostream& progress) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& ref : deployments) {
    if (auto s = RolloutWaiter(client, ref, deadline, timeout, progress).wait(); !s.isOk()) {
      return s;
    }
  }
  return Status::ok();
}

}  // namespace banlieue::roles::bootstrap
