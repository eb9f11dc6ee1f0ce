#include "host/roles/provider/image_import_plan.h"

#include "host/roles/images/import_job.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;
using runtime::annotation;
namespace images = roles::images;
using State = images::ImportOutcome::State;

std::string trim(const std::string& text) {
  auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

// When a failed Job failed: its Failed condition's transition, else its start.
std::optional<std::time_t> failedAt(const rapidjson::Value& job) {
  if (const auto* conditions = json::find(&job, "status.conditions");
      conditions != nullptr && conditions->IsArray()) {
    for (const auto& c : conditions->GetArray()) {
      if (json::stringOr(&c, "type") == "Failed") {
        return parseRfc3339(json::stringOr(&c, "lastTransitionTime"));
      }
    }
  }
  return parseRfc3339(json::stringOr(&job, "status.startTime"));
}

// Newer first: creationTimestamp (RFC 3339 in UTC sorts as text), then name.
bool newer(const ExistingImportJob& a, const ExistingImportJob& b) {
  auto ta = json::stringOr(a.job, "metadata.creationTimestamp");
  auto tb = json::stringOr(b.job, "metadata.creationTimestamp");
  if (ta != tb) return ta > tb;
  return json::stringOr(a.job, "metadata.name") > json::stringOr(b.job, "metadata.name");
}

// One import: a failure domain, or one of its attributes.importTargets.
struct ImportUnit {
  std::string failure_domain;
  std::string target;  // empty: the whole failure domain
};

// Every import the Provider's failure domains ask for, in their order: one per import target
// of a domain that publishes them, else one per domain.
std::vector<ImportUnit> importUnits(const rapidjson::Value& failure_domains) {
  std::vector<ImportUnit> units;
  for (const auto& fd : failure_domains.GetArray()) {
    std::string name = json::stringOr(&fd, "name");
    std::vector<std::string> targets;
    if (const auto* published = json::find(&fd, "attributes.importTargets");
        published != nullptr && published->IsArray()) {
      for (const auto& t : published->GetArray()) {
        if (!t.IsString() || t.GetStringLength() == 0) continue;
        std::string target = t.GetString();
        if (std::find(targets.begin(), targets.end(), target) == targets.end()) {
          targets.push_back(std::move(target));
        }
      }
    }
    if (targets.empty()) units.push_back({name, {}});
    for (auto& target : targets) units.push_back({name, std::move(target)});
  }
  return units;
}

// The row of an import that no Job has reported on.
api::ImageZone unitZone(const ImportUnit& unit) {
  api::ImageZone zone;
  zone.name = images::zoneRowName(unit.failure_domain, unit.target);
  if (!unit.target.empty()) {
    zone.failure_domain = unit.failure_domain;
    zone.target = unit.target;
  }
  return zone;
}

// Every zone gets the same not-ready reason (nothing can be imported).
ImportPlan blocked(const ImageRowContext& context, const std::string& reason,
                   const std::string& message) {
  ImportPlan plan;
  plan.reason = reason;
  plan.message = message;
  for (const auto& unit : importUnits(*context.failure_domains)) {
    api::ImageZone zone = unitZone(unit);
    zone.reason = reason;
    zone.message = message;
    plan.zones.push_back(std::move(zone));
  }
  return plan;
}

// "N failure domain(s)", or with import targets "N import target(s) in M failure domain(s)".
std::string importsCounted(const std::vector<api::ImageZone>& zones, size_t count) {
  std::vector<std::string> domains;
  bool targets = false;
  for (const auto& z : zones) {
    targets = targets || !z.target.empty();
    if (std::find(domains.begin(), domains.end(), z.failureDomainName()) == domains.end()) {
      domains.push_back(z.failureDomainName());
    }
  }
  if (!targets) return std::to_string(count) + " failure domain(s)";
  return std::to_string(count) + " import target(s) in " + std::to_string(domains.size()) +
         " failure domain(s)";
}

void summarize(ImportPlan& plan) {
  size_t ready = 0;
  const api::ImageZone* failed = nullptr;
  for (const auto& z : plan.zones) {
    if (z.ready) {
      ++ready;
    } else if (failed == nullptr && z.reason != "Importing") {
      failed = &z;
    }
  }
  // Ready only when every row is: a VM may land in any failure domain, on any target.
  if (!plan.zones.empty() && ready == plan.zones.size()) {
    plan.ready = true;
    plan.reason = "Imported";
    plan.message = "imported into " + importsCounted(plan.zones, ready);
    plan.resolved_ref = plan.zones.front().resolved_ref;
    for (const auto& z : plan.zones) {
      if (z.resolved_ref != plan.resolved_ref) plan.resolved_ref.clear();
    }
    return;
  }
  if (failed != nullptr) {
    plan.reason = failed->reason;
    plan.message = "failure domain " + failed->failureDomainName() +
                   (failed->target.empty() ? "" : " target " + failed->target) + ": " +
                   failed->message;
    return;
  }
  plan.reason = "Importing";
  plan.message = "importing into " + std::to_string(plan.zones.size() - ready) + " of " +
                 importsCounted(plan.zones, plan.zones.size());
}

}  // namespace

std::string importArtifactFormat(const std::string& artifact_kind, const std::string& file) {
  auto ends = [&file](const std::string& suffix) {
    return file.size() >= suffix.size() &&
           file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (artifact_kind == "iso" || ends(".iso")) return "iso";
  if (ends(".qcow2")) return "qcow2";
  return "raw";
}

std::string forceReimportToken(const rapidjson::Value& image) {
  return trim(annotation(image, images::kForceReimportAnnotation));
}

ImportPlan planImports(const rapidjson::Value& image, const ImageRowContext& context,
                       const ImportSettings& settings, const std::vector<ExistingImportJob>& jobs,
                       std::time_t now) {
  const auto* artifact = json::find(&image, "status.buildArtifact");
  std::string kind = json::stringOr(artifact, "kind");
  std::string file = json::stringOr(artifact, "file");
  std::string format = importArtifactFormat(kind, file);
  std::string pvc = json::stringOr(artifact, "pvcRef");
  std::string checksum = json::stringOr(artifact, "checksum");
  std::string image_name = json::stringOr(&image, "metadata.name");

  // Reasons that hold for every zone. Jobs already made stay untouched: nothing here says the
  // artifact they imported is wrong.
  if (!settings.plugin_imports) {
    return blocked(context, "ImportUnsupported",
                   "plugin " + settings.backend + " has no import_image operation");
  }
  if (!settings.image_formats.empty() &&
      std::find(settings.image_formats.begin(), settings.image_formats.end(), format) ==
          settings.image_formats.end()) {
    return blocked(context, "ImportUnsupported",
                   "plugin " + settings.backend + " does not import " + format + " artifacts");
  }
  if (settings.container_image.empty()) {
    return blocked(context, "ImportUnavailable",
                   "the ProviderClass names no image to run import Jobs with (External class)");
  }
  if (checksum.empty()) {
    return blocked(context, "ChecksumMissing",
                   "status.buildArtifact.checksum is empty: imports fail closed");
  }
  if (file.empty() || pvc.empty()) {
    return blocked(
        context, "ArtifactLocationUnknown",
        "status.buildArtifact names no " + std::string(file.empty() ? "file" : "pvcRef"));
  }

  std::string token = forceReimportToken(image);
  ImportPlan plan;
  std::map<std::string, bool> wanted_bases;  // base name -> a chosen Job exists
  std::vector<std::string> chosen_names;
  for (const auto& unit : importUnits(*context.failure_domains)) {
    images::ImportJobParams p;
    p.image_name = image_name;
    p.image_uid = json::stringOr(&image, "metadata.uid");
    p.provider_namespace = context.provider_namespace;
    p.provider_name = context.provider_name;
    p.backend = settings.backend;
    p.failure_domain = unit.failure_domain;
    p.target = unit.target;
    p.artifact_file = file;
    p.artifact_format = format;
    p.checksum = checksum;
    if (settings.artifacts_host_root.empty()) {
      p.pvc_name = pvc;
    } else {
      p.artifacts_host_path = settings.artifacts_host_root + "/" + pvc;
    }
    p.os_artifact_name = json::stringOr(artifact, "osArtifactRef");
    p.os_artifact_uid = json::stringOr(artifact, "osArtifactUid");
    p.job_namespace = settings.job_namespace;
    p.container_image = settings.container_image;
    p.plugin_dir = settings.plugin_dir;
    p.plugin_sha256 = settings.plugin_sha256;
    p.log_level = settings.log_level;
    p.proxy_env = settings.proxy_env;
    std::string base = images::importJobName(p);
    p.generation_suffix = token;
    std::string wanted = images::importJobName(p);

    const ExistingImportJob* chosen = nullptr;
    for (const auto& j : jobs) {
      if (annotation(*j.job, images::kImportBaseAnnotation) != base) continue;
      std::string name = json::stringOr(j.job, "metadata.name");
      if (!token.empty() ? name == wanted : (chosen == nullptr || newer(j, *chosen))) chosen = &j;
    }
    wanted_bases[base] = chosen != nullptr;
    if (chosen == nullptr) {
      auto manifest = images::importJob(p);
      api::ImageZone zone = unitZone(unit);
      if (!manifest.ok()) {
        zone.reason = manifest.status().reason();
        zone.message = manifest.status().message();
      } else {
        plan.create.push_back(*manifest);
        zone.reason = "Importing";
        zone.message = "import Job " + settings.job_namespace + "/" + wanted + " created";
      }
      plan.zones.push_back(std::move(zone));
      continue;
    }
    std::string chosen_name = json::stringOr(chosen->job, "metadata.name");
    chosen_names.push_back(chosen_name);
    auto outcome = images::importOutcome(*chosen->job, chosen->pod);
    auto zone = images::zoneRow(unit.failure_domain, outcome, unit.target);
    if (outcome.state == State::kRunning) {
      if (chosen->progress) {
        const auto& p = *chosen->progress;
        zone.progress =
            api::ImageImportProgress{.phase = p.phase,
                                     .percent = p.percent,
                                     .bytes_done = static_cast<int64_t>(p.bytes_done),
                                     .bytes_total = static_cast<int64_t>(p.bytes_total)};
        zone.message += " (" + images::describeImportProgress(p) + ")";
      }
      if (!plan.requeue_after || kImportProgressPoll < *plan.requeue_after) {
        plan.requeue_after = kImportProgressPoll;
      }
    }
    if (outcome.state == State::kFailed && outcome.retryable) {
      auto at = failedAt(*chosen->job);
      auto due = at ? *at + settings.retry_after.count() : now;
      if (now >= due) {
        plan.remove.push_back(chosen_name);
        zone.message += " (retrying)";
      } else {
        auto wait = std::chrono::seconds(due - now);
        if (!plan.requeue_after || wait < *plan.requeue_after) plan.requeue_after = wait;
        zone.message +=
            " (retried " + std::to_string(settings.retry_after.count()) + " s after it failed)";
      }
    }
    plan.zones.push_back(std::move(zone));
  }

  // Jobs of another artifact, zone or target go at once; a superseded Job of a wanted zone goes
  // once the Job replacing it exists.
  for (const auto& j : jobs) {
    std::string name = json::stringOr(j.job, "metadata.name");
    if (std::find(chosen_names.begin(), chosen_names.end(), name) != chosen_names.end()) continue;
    auto base = wanted_bases.find(annotation(*j.job, images::kImportBaseAnnotation));
    if (base == wanted_bases.end() || base->second) plan.remove.push_back(name);
  }
  summarize(plan);
  return plan;
}

void applyImportPlan(rapidjson::Document& row, const ImportPlan& plan) {
  auto& a = row.GetAllocator();
  auto set = [&](const char* key, rapidjson::Value value) {
    row.RemoveMember(key);
    row.AddMember(rapidjson::StringRef(key), value, a);
  };
  set("ready", rapidjson::Value(plan.ready));
  set("reason", json::stringValue(plan.reason, a));
  set("message", json::stringValue(plan.message, a));
  row.RemoveMember("resolvedRef");
  if (!plan.resolved_ref.empty()) set("resolvedRef", json::stringValue(plan.resolved_ref, a));
  rapidjson::Value zones(rapidjson::kArrayType);
  for (const auto& z : plan.zones) {
    rapidjson::Value zone(rapidjson::kObjectType);
    zone.AddMember("name", json::stringValue(z.name, a), a);
    if (!z.failure_domain.empty()) {
      zone.AddMember("failureDomain", json::stringValue(z.failure_domain, a), a);
    }
    if (!z.target.empty()) zone.AddMember("target", json::stringValue(z.target, a), a);
    zone.AddMember("ready", z.ready, a);
    if (!z.resolved_ref.empty()) {
      zone.AddMember("resolvedRef", json::stringValue(z.resolved_ref, a), a);
    }
    if (!z.reason.empty()) zone.AddMember("reason", json::stringValue(z.reason, a), a);
    if (!z.message.empty()) zone.AddMember("message", json::stringValue(z.message, a), a);
    if (z.progress) {
      rapidjson::Value progress(rapidjson::kObjectType);
      progress.AddMember("phase", json::stringValue(z.progress->phase, a), a);
      progress.AddMember("percent", z.progress->percent, a);
      progress.AddMember("bytesDone", z.progress->bytes_done, a);
      progress.AddMember("bytesTotal", z.progress->bytes_total, a);
      zone.AddMember("progress", progress, a);
    }
    zones.PushBack(zone, a);
  }
  set("zones", std::move(zones));
}

}  // namespace banlieue::roles::provider
