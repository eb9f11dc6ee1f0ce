#include "host/roles/provider/image_reconciler.h"

#include "host/common/logging.h"
#include "host/kube/api_error.h"
#include "host/roles/images/import_job.h"
#include "host/roles/provider/image_deletion.h"
#include "host/roles/provider/image_row.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <ctime>

namespace banlieue::roles::provider {

namespace json = sdk::json;

namespace {

std::string annotationOf(const rapidjson::Value& object, const char* key) {
  const auto* value = json::member(json::find(&object, "metadata.annotations"), key);
  return value != nullptr && value->IsString() ? value->GetString() : std::string();
}

// The pod's owning Job's name (pods carry the Job as controller owner).
std::string ownerJobOf(const rapidjson::Value& pod) {
  const auto* owners = json::find(&pod, "metadata.ownerReferences");
  if (owners == nullptr || !owners->IsArray()) return {};
  for (const auto& o : owners->GetArray()) {
    if (json::stringOr(&o, "kind") == "Job") return json::stringOr(&o, "name");
  }
  return {};
}

}  // namespace

std::string importJobSelector(const std::string& provider_namespace,
                              const std::string& provider_name) {
  return "app.kubernetes.io/component=image-import,banlieue.io/provider=" +
         images::importLabelValue(provider_name) +
         ",banlieue.io/provider-namespace=" + images::importLabelValue(provider_namespace);
}

std::string importedImageOf(const runtime::Object& object, const runtime::Informer& jobs) {
  if (!object) return {};
  if (json::stringOr(object.get(), "kind") == "Pod" ||
      json::find(object.get(), "spec.containers") != nullptr) {
    std::string job_name = ownerJobOf(*object);
    if (job_name.empty()) return {};
    auto job = jobs.get(json::stringOr(object.get(), "metadata.namespace") + "/" + job_name);
    return job ? annotationOf(*job, "banlieue.io/vmimage") : std::string();
  }
  return annotationOf(*object, "banlieue.io/vmimage");
}

std::vector<ExistingImportJob> ImageReconciler::importJobsOf(
    const std::string& image_name, std::vector<runtime::Object>& keep_alive) const {
  std::string provider = context_.provider_namespace + "/" + context_.provider_name;
  std::vector<ExistingImportJob> out;
  for (const auto& job : imports_->jobs.list()) {
    // Labels can be hashes of long names: the annotations carry them exactly.
    if (annotationOf(*job, "banlieue.io/vmimage") != image_name ||
        annotationOf(*job, "banlieue.io/provider") != provider) {
      continue;
    }
    keep_alive.push_back(job);
    out.push_back({job.get(), nullptr});
  }
  // The newest pod of each Job: its exit status and termination message say why it ended. A
  // pod that failed for good wins over newer attempts (the Job's own retries, which can only
  // fail the same way): the zone says why at once and does not flap back to Importing.
  for (const auto& pod : imports_->pods.list()) {
    std::string owner = ownerJobOf(*pod);
    for (auto& j : out) {
      if (json::stringOr(j.job, "metadata.name") != owner) continue;
      const bool for_good = images::importPodFailedForGood(*pod);
      const bool chosen_for_good = j.pod != nullptr && images::importPodFailedForGood(*j.pod);
      if (j.pod == nullptr || (for_good && !chosen_for_good) ||
          (for_good == chosen_for_good &&
           json::stringOr(pod.get(), "metadata.creationTimestamp") >
               json::stringOr(j.pod, "metadata.creationTimestamp"))) {
        keep_alive.push_back(pod);
        j.pod = pod.get();
      }
    }
  }
  return out;
}

Status ImageReconciler::removeImportJobs(const std::string& image_name) {
  if (imports_ == nullptr) return Status::ok();
  std::vector<runtime::Object> keep_alive;
  for (const auto& j : importJobsOf(image_name, keep_alive)) {
    if (auto s = deleteImportJob(json::stringOr(j.job, "metadata.name")); !s.isOk()) return s;
  }
  return Status::ok();
}

Status ImageReconciler::deleteImportJob(const std::string& name, const char* propagation) {
  kube::DeleteOptions options;
  options.propagation_policy = propagation;
  auto s = context_.client.remove(kJobType, imports_->settings.job_namespace, name, options);
  return s.isOk() || kube::isNotFound(s) ? Status::ok() : s;
}

void ImageReconciler::readImportProgress(std::vector<ExistingImportJob>& jobs) const {
  for (auto& j : jobs) {
    if (j.pod == nullptr || json::stringOr(j.pod, "status.phase") != "Running") continue;
    if (images::importOutcome(*j.job, j.pod).state != images::ImportOutcome::State::kRunning) {
      continue;
    }
    // The tail only: progress lines come every few seconds, the last one is what counts.
    auto tail = context_.client.podLogTail(json::stringOr(j.pod, "metadata.namespace"),
                                           json::stringOr(j.pod, "metadata.name"), 20, 16384);
    if (!tail.ok()) {
      // No progress is no failure: the row still says Importing.
      common::logger("provider")
          ->debug("import progress of {}: {}", json::stringOr(j.pod, "metadata.name"),
                  tail.status().message());
      continue;
    }
    j.progress = images::lastImportProgress(*tail);
  }
}

runtime::Result ImageReconciler::runImports(const rapidjson::Value& image,
                                            const ImageRowContext& row_context,
                                            rapidjson::Document& row) {
  std::string image_name = json::stringOr(&image, "metadata.name");
  std::vector<runtime::Object> keep_alive;
  auto jobs = importJobsOf(image_name, keep_alive);
  readImportProgress(jobs);
  auto plan = planImports(image, row_context, imports_->settings, jobs, std::time(nullptr));
  const std::string& ns = imports_->settings.job_namespace;
  bool retry_soon = false;
  for (const auto& name : plan.remove) {
    if (auto s = deleteImportJob(name); !s.isOk()) return runtime::Result::retry(s);
    retry_soon = true;  // a retried Job is made again once the old one is gone
  }
  for (const auto& manifest : plan.create) {
    auto created = context_.client.create(kJobType, ns, manifest);
    // AlreadyExists: a Job of that name is still being deleted, or the cache lags: look again.
    if (!created.ok() && kube::isAlreadyExists(created.status())) {
      retry_soon = true;
    } else if (!created.ok()) {
      context_.events.warning(image, "ImportJobFailed", "CreateImportJob",
                              created.status().message());
      return runtime::Result::retry(created.status());
    }
  }
  applyImportPlan(row, plan);
  // After acting on the plan: tests wait for this line to know a pass saw the image as it is.
  common::logger("provider")
      ->debug(
          "vmimage {}: import pass done (force-reimport token '{}'; {} job(s) created, {} "
          "removed)",
          image_name, forceReimportToken(image), plan.create.size(), plan.remove.size());
  if (retry_soon) return runtime::Result::requeueAfter(std::chrono::seconds(2));
  if (plan.requeue_after) return runtime::Result::requeueAfter(*plan.requeue_after);
  return runtime::Result::done();
}

const rapidjson::Value* ImageReconciler::currentRow(const rapidjson::Value& image) const {
  const rapidjson::Value* current = nullptr;
  if (const auto* rows = json::find(&image, "status.perProvider");
      rows != nullptr && rows->IsArray()) {
    for (const auto& r : rows->GetArray()) {
      if (json::stringOr(&r, "providerName") == context_.provider_name &&
          json::stringOr(&r, "providerNamespace") == context_.provider_namespace) {
        current = &r;
      }
    }
  }
  return current;
}

Status ImageReconciler::applyRow(const std::string& image_name, const rapidjson::Value* row) {
  rapidjson::Document body(rapidjson::kObjectType);
  auto& a = body.GetAllocator();
  body.AddMember("apiVersion", "banlieue.io/v1alpha1", a);
  body.AddMember("kind", "VMImage", a);
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", json::stringValue(image_name, a), a);
  body.AddMember("metadata", meta, a);
  rapidjson::Value rows(rapidjson::kArrayType);
  if (row != nullptr) rows.PushBack(rapidjson::Value(*row, a), a);
  rapidjson::Value status(rapidjson::kObjectType);
  status.AddMember("perProvider", rows, a);
  body.AddMember("status", status, a);
  kube::ApplyOptions options;
  options.field_manager =
      imageRowFieldManager(class_name_, context_.provider_namespace, context_.provider_name);
  options.subresource = "status";
  // No force: only this Provider's manager ever writes this row; a conflict means someone else
  // did, and is reported rather than overwritten.
  auto applied =
      context_.client.apply(kVMImageType, "", image_name, json::serialize(body), options);
  return applied.ok() ? Status::ok() : applied.status();
}

runtime::Result ImageReconciler::finalizeImage(const rapidjson::Value& image,
                                               const std::string& finalizer) {
  std::string image_name = json::stringOr(&image, "metadata.name");
  // 1. No import may write to the backend after its copy was removed: the Jobs go first, and
  //    Foreground keeps each one listed until its pods are gone.
  if (imports_ != nullptr) {
    std::vector<runtime::Object> keep_alive;
    auto jobs = importJobsOf(image_name, keep_alive);
    for (const auto& j : jobs) {
      if (auto s = deleteImportJob(json::stringOr(j.job, "metadata.name"), "Foreground");
          !s.isOk()) {
        return runtime::Result::retry(s);
      }
    }
    if (!jobs.empty()) return runtime::Result::requeueAfter(std::chrono::seconds(2));
  }
  auto release = [&](const std::string& reason, const std::string& message) {
    if (!reason.empty()) context_.events.normal(image, reason, "Delete", message);
    auto s = runtime::removeFinalizer(context_.client, kVMImageType, image, finalizer);
    return s.isOk() ? runtime::Result::done() : runtime::Result::retry(s);
  };
  const std::string provider = context_.provider_namespace + "/" + context_.provider_name;
  // 2. What banlieue may not or cannot remove.
  if (retainOnDelete(image)) {
    return release("ImageRetained", "spec.template.retainOnDelete: the copies on Provider " +
                                        provider + " stay on its backend");
  }
  std::string kind = sourceKindFor(image, class_name_);
  if (kind != "Url") {
    // The row names the user's own template or file (or nothing): never banlieue's to remove.
    return release("ImageRetained", "the source for class " + class_name_ + " is " +
                                        (kind.empty() ? std::string("gone") : "a " + kind) +
                                        ": Provider " + provider +
                                        " imported nothing it may remove");
  }
  const rapidjson::Value* current = currentRow(image);
  auto zones = zonesToDelete(current);
  if (zones.empty()) return release("", "");
  // 3. delete_image for every zone not done yet.
  std::vector<std::pair<ZoneToDelete, ZoneDeletion>> outcomes;
  std::optional<std::chrono::milliseconds> retry_after;
  auto instance = context_.session.instance();
  for (const auto& zone : zones) {
    ZoneDeletion outcome;
    if (!instance) {
      outcome.reason = "ProviderNotConnected";
      outcome.message = "provider " + provider + " is not connected to its backend";
      outcome.token = zone.token;
      outcome.retry_after = std::chrono::seconds(30);
    } else {
      auto result = instance->deleteImage(
          deleteImageRequest(image, zone),
          context_.callOptions(json::stringOr(&image, "metadata.uid"), "VMImage " + image_name,
                               json::integer(&image, "metadata.generation").value_or(0)));
      outcome = zoneDeletion(result);
      if (outcome.warning) {
        context_.events.warning(
            image, outcome.reason, "DeleteImage",
            "failure domain " + zone.name + " of Provider " + provider + ": " + outcome.message);
      }
    }
    if (outcome.retry_after && (!retry_after || *outcome.retry_after < *retry_after)) {
      retry_after = outcome.retry_after;
    }
    outcomes.emplace_back(zone, std::move(outcome));
  }
  auto row = deletionRow(current, context_.provider_namespace, context_.provider_name, outcomes);
  // The row is written before the finalizer goes: a task token must survive a restart.
  if (auto s = applyRow(image_name, &row); !s.isOk()) return runtime::Result::retry(s);
  if (json::stringOr(&row, "reason") != "Deleted") {
    return runtime::Result::requeueAfter(retry_after.value_or(std::chrono::seconds(5)));
  }
  size_t retained = 0;
  for (const auto& [zone, outcome] : outcomes) retained += outcome.reason == "Retained" ? 1 : 0;
  if (retained > 0) {
    return release("ImageRetained", std::to_string(retained) + " of " +
                                        std::to_string(outcomes.size()) +
                                        " failure domain(s) of Provider " + provider +
                                        " keep their copy: the plugin cannot delete images");
  }
  return release("ImageDeleted", "removed from " + std::to_string(outcomes.size()) +
                                     " failure domain(s) of Provider " + provider);
}

runtime::Result ImageReconciler::reconcile(const runtime::Request& request) {
  auto image = images_.get(request.key());
  auto provider = providers_.get(context_.provider_namespace + "/" + context_.provider_name);
  if (!image) {
    // Deleted: the garbage collector removes its Jobs (they are owned by it); this only speeds
    // that up and covers Jobs made before the image's uid was known.
    auto s = removeImportJobs(request.name);
    return s.isOk() ? runtime::Result::done() : runtime::Result::retry(s);
  }
  const std::string finalizer = imageFinalizer(context_.provider_namespace, context_.provider_name);
  const bool has_finalizer = runtime::hasFinalizer(*image, finalizer);
  const bool provider_leaving =
      !provider || json::find(&*provider, "metadata.deletionTimestamp") != nullptr;
  if (provider_leaving) {
    // A Provider going away keeps no VMImage from being deleted; what it imported stays on its
    // backend (docs/adr/0037).
    if (!has_finalizer) return runtime::Result::done();
    context_.events.normal(*image, "ImageRetained", "Delete",
                           "Provider " + context_.provider_namespace + "/" +
                               context_.provider_name +
                               " is being deleted: its copies stay on its backend");
    auto s = runtime::removeFinalizer(context_.client, kVMImageType, *image, finalizer);
    return s.isOk() ? runtime::Result::done() : runtime::Result::retry(s);
  }
  if (json::find(&*image, "metadata.deletionTimestamp") != nullptr) {
    if (!has_finalizer) {
      auto s = removeImportJobs(request.name);
      return s.isOk() ? runtime::Result::done() : runtime::Result::retry(s);
    }
    return finalizeImage(*image, finalizer);
  }
  ImageRowContext row_context{class_name_, context_.provider_namespace, context_.provider_name,
                              json::find(&*provider, "status.failureDomains")};
  auto row = buildImageRow(*image, row_context);

  runtime::Result result = runtime::Result::done();
  std::string row_reason = row ? json::stringOr(&*row, "reason") : std::string();
  if (imports_ != nullptr && row_reason == "ImportPending") {
    // Before any import Job can write to the backend: the copies it makes must be removable.
    if (!has_finalizer) {
      if (auto s = runtime::addFinalizer(context_.client, kVMImageType, *image, finalizer);
          !s.isOk()) {
        return runtime::Result::retry(s);
      }
    }
    result = runImports(*image, row_context, *row);
    if (result.failed()) return result;
  } else if (imports_ != nullptr && row_reason != "NoFailureDomains") {
    // No source for this class any more, or the artifact is being rebuilt or failed: Jobs of
    // the old artifact would only import what is no longer wanted.
    if (auto s = removeImportJobs(request.name); !s.isOk()) return runtime::Result::retry(s);
  }

  const rapidjson::Value* current = currentRow(*image);
  if (!row && current == nullptr) return result;
  if (row && current != nullptr && *row == *current) return result;
  if (auto s = applyRow(request.name, row ? &*row : nullptr); !s.isOk()) {
    return runtime::Result::retry(s);
  }
  return result;
}

}  // namespace banlieue::roles::provider
