// Keeps this Provider's row of every VMImage's status.perProvider current (image_row.h), with a
// field manager of its own so the rows of other Providers are never touched; for a built Url
// image it also runs the per-zone import Jobs and maps their results into the row
// (image_import_plan.h). A VMImage it imports carries its finalizer, so that its backend
// copies are removed before the VMImage goes (image_deletion.h).
#pragma once

#include "host/roles/provider/image_import_plan.h"
#include "host/roles/provider/runtime_context.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <string>

namespace banlieue::roles::provider {

inline const kube::ResourceType kVMImageType{"banlieue.io", "v1alpha1", "vmimages", false};
inline const kube::ResourceType kJobType{"batch", "v1", "jobs", true};

// The import Jobs and their pods, watched in the job namespace with this Provider's labels.
struct ImportWatch {
  ImportSettings settings;
  runtime::Informer& jobs;
  runtime::Informer& pods;
};

// The label selector of this Provider's import Jobs and their pods.
std::string importJobSelector(const std::string& provider_namespace,
                              const std::string& provider_name);

// The VMImage an import Job or its pod belongs to (annotation banlieue.io/vmimage on Jobs,
// label on pods, which carry the Job's labels), or empty.
std::string importedImageOf(const runtime::Object& job_or_pod, const runtime::Informer& jobs);

class ImageReconciler final : public runtime::Reconciler {
 public:
  ImageReconciler(RuntimeContext& context, std::string class_name, runtime::Informer& images,
                  runtime::Informer& providers, ImportWatch* imports)
      : context_(context),
        class_name_(std::move(class_name)),
        images_(images),
        providers_(providers),
        imports_(imports) {}
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  // Creates and deletes Jobs as planned; the row is returned with the plan applied.
  runtime::Result runImports(const rapidjson::Value& image, const ImageRowContext& row_context,
                             rapidjson::Document& row);
  // Deletes every import Job of this Provider for `image_name` (source gone, not built).
  Status removeImportJobs(const std::string& image_name);
  // Deletes one import Job by name (already gone counts as done). Background lets its pods go
  // after it; Foreground keeps it listed until they are gone.
  Status deleteImportJob(const std::string& name, const char* propagation = "Background");
  // The VMImage is being deleted and carries this Provider's finalizer (image_deletion.h).
  runtime::Result finalizeImage(const rapidjson::Value& image, const std::string& finalizer);
  // This Provider's row of status.perProvider, or null.
  const rapidjson::Value* currentRow(const rapidjson::Value& image) const;
  // Server-side applies this Provider's row (null: no row) with its own field manager.
  Status applyRow(const std::string& image_name, const rapidjson::Value* row);
  // Fills each running import's progress from the tail of its pod's log.
  void readImportProgress(std::vector<ExistingImportJob>& jobs) const;
  std::vector<ExistingImportJob> importJobsOf(const std::string& image_name,
                                              std::vector<runtime::Object>& keep_alive) const;

  RuntimeContext& context_;
  std::string class_name_;
  runtime::Informer& images_;
  runtime::Informer& providers_;
  ImportWatch* imports_;  // null: no imports (rows stay ImportPending)
};

}  // namespace banlieue::roles::provider
