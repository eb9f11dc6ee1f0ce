// Keeps this Provider's row of every VMImage's status.perProvider current (image_row.h), with a
// field manager of its own so the rows of other Providers are never touched.
#pragma once

#include "host/roles/provider/runtime_context.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <string>

namespace banlieue::roles::provider {

inline const kube::ResourceType kVMImageType{"banlieue.io", "v1alpha1", "vmimages", false};

class ImageReconciler final : public runtime::Reconciler {
 public:
  ImageReconciler(RuntimeContext& context, std::string class_name, runtime::Informer& images,
                  runtime::Informer& providers)
      : context_(context),
        class_name_(std::move(class_name)),
        images_(images),
        providers_(providers) {}
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  RuntimeContext& context_;
  std::string class_name_;
  runtime::Informer& images_;
  runtime::Informer& providers_;
};

}  // namespace banlieue::roles::provider
