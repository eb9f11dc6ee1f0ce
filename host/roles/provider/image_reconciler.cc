#include "host/roles/provider/image_reconciler.h"

#include "host/roles/provider/image_row.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {

namespace json = sdk::json;

runtime::Result ImageReconciler::reconcile(const runtime::Request& request) {
  auto image = images_.get(request.key());
  auto provider = providers_.get(context_.provider_namespace + "/" + context_.provider_name);
  if (!image || !provider) return runtime::Result::done();
  ImageRowContext row_context{class_name_, context_.provider_namespace, context_.provider_name,
                              json::find(&*provider, "status.failureDomains")};
  auto row = buildImageRow(*image, row_context);

  const rapidjson::Value* current = nullptr;
  if (const auto* rows = json::find(&*image, "status.perProvider");
      rows != nullptr && rows->IsArray()) {
    for (const auto& r : rows->GetArray()) {
      if (json::stringOr(&r, "providerName") == context_.provider_name &&
          json::stringOr(&r, "providerNamespace") == context_.provider_namespace) {
        current = &r;
      }
    }
  }
  if (!row && current == nullptr) return runtime::Result::done();
  if (row && current != nullptr && *row == *current) return runtime::Result::done();

  rapidjson::Document body(rapidjson::kObjectType);
  auto& a = body.GetAllocator();
  body.AddMember("apiVersion", "banlieue.io/v1alpha1", a);
  body.AddMember("kind", "VMImage", a);
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", json::stringValue(request.name, a), a);
  body.AddMember("metadata", meta, a);
  rapidjson::Value rows(rapidjson::kArrayType);
  if (row) rows.PushBack(rapidjson::Value(*row, a), a);
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
      context_.client.apply(kVMImageType, "", request.name, json::serialize(body), options);
  if (!applied.ok()) return runtime::Result::retry(applied.status());
  return runtime::Result::done();
}

}  // namespace banlieue::roles::provider
