#include "host/api/crd.h"

#include "host/api/fields.h"

namespace banlieue::api {
namespace {

Json str(const std::string& s, Alloc& a) {
  return stringValue(s, a);
}

Json typed(const char* type, Alloc& a) {
  Json v(rapidjson::kObjectType);
  v.AddMember("type", Json(type, a), a);
  return v;
}

}  // namespace

std::string crdFileName(const std::string& group, const std::string& plural) {
  return group + "_" + plural + ".yaml";
}

rapidjson::Document buildCrd(const KindInfo& kind) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("apiVersion", "apiextensions.k8s.io/v1", a);
  doc.AddMember("kind", "CustomResourceDefinition", a);

  Json metadata(rapidjson::kObjectType);
  metadata.AddMember("name", str(kind.crdName(), a), a);
  Json labels(rapidjson::kObjectType);
  labels.AddMember("app.kubernetes.io/name", "banlieue", a);
  labels.AddMember("app.kubernetes.io/part-of", "banlieue", a);
  for (const auto& [k, v] : kind.crd_labels) labels.AddMember(str(k, a), str(v, a), a);
  metadata.AddMember("labels", labels, a);
  doc.AddMember("metadata", metadata, a);

  Json spec(rapidjson::kObjectType);
  spec.AddMember("group", str(kind.group, a), a);
  Json names(rapidjson::kObjectType);
  names.AddMember("kind", str(kind.kind, a), a);
  names.AddMember("listKind", str(kind.kind + "List", a), a);
  names.AddMember("plural", str(kind.plural, a), a);
  names.AddMember("singular", str(kind.singular(), a), a);
  if (!kind.short_names.empty()) {
    Json short_names(rapidjson::kArrayType);
    for (const auto& s : kind.short_names) short_names.PushBack(str(s, a), a);
    names.AddMember("shortNames", short_names, a);
  }
  Json categories(rapidjson::kArrayType);
  categories.PushBack(Json(kCategory, a), a);
  // CAPI's `kubectl get cluster-api` lists infrastructure kinds through this category.
  if (kind.crd_labels.count(kCapiContractLabel) != 0) categories.PushBack("cluster-api", a);
  names.AddMember("categories", categories, a);
  spec.AddMember("names", names, a);
  spec.AddMember("scope", Json(kind.namespaced ? "Namespaced" : "Cluster", a), a);

  Json version(rapidjson::kObjectType);
  version.AddMember("name", str(kind.version, a), a);
  version.AddMember("served", true, a);
  version.AddMember("storage", true, a);
  if (kind.status_schema != nullptr) {
    Json subresources(rapidjson::kObjectType);
    subresources.AddMember("status", Json(rapidjson::kObjectType), a);
    if (kind.scale) {
      Json scale(rapidjson::kObjectType);
      scale.AddMember("specReplicasPath", str(kind.scale->spec_replicas, a), a);
      scale.AddMember("statusReplicasPath", str(kind.scale->status_replicas, a), a);
      if (!kind.scale->label_selector.empty()) {
        scale.AddMember("labelSelectorPath", str(kind.scale->label_selector, a), a);
      }
      subresources.AddMember("scale", scale, a);
    }
    version.AddMember("subresources", subresources, a);
  }
  Json columns(rapidjson::kArrayType);
  for (const auto& c : kind.columns) {
    Json column(rapidjson::kObjectType);
    column.AddMember("name", str(c.name, a), a);
    column.AddMember("type", str(c.type, a), a);
    column.AddMember("jsonPath", str(c.json_path, a), a);
    if (!c.description.empty()) column.AddMember("description", str(c.description, a), a);
    if (c.priority != 0) column.AddMember("priority", c.priority, a);
    columns.PushBack(column, a);
  }
  version.AddMember("additionalPrinterColumns", columns, a);

  Json root = typed("object", a);
  root.AddMember("description", str(kind.description, a), a);
  Json properties(rapidjson::kObjectType);
  auto described = [&](const char* type, const char* description) {
    Json v = typed(type, a);
    v.AddMember("description", Json(description, a), a);
    return v;
  };
  properties.AddMember(
      "apiVersion",
      described("string", "Group and version of this object's schema, e.g. banlieue.io/v1alpha1"),
      a);
  properties.AddMember("kind", described("string", "The object's kind, e.g. VirtualMachine"), a);
  // The apiserver refuses anything but type (and name/generateName) on the root metadata;
  // kubectl explain describes it from ObjectMeta.
  properties.AddMember("metadata", typed("object", a), a);
  Json spec_schema;
  kind.spec_schema(spec_schema, a);
  properties.AddMember("spec", spec_schema, a);
  if (kind.status_schema != nullptr) {
    Json status_schema;
    kind.status_schema(status_schema, a);
    properties.AddMember("status", status_schema, a);
  }
  root.AddMember("properties", properties, a);
  if (kind.spec_required) {
    Json required(rapidjson::kArrayType);
    required.PushBack("spec", a);
    root.AddMember("required", required, a);
  }
  Json schema(rapidjson::kObjectType);
  schema.AddMember("openAPIV3Schema", root, a);
  version.AddMember("schema", schema, a);

  Json versions(rapidjson::kArrayType);
  versions.PushBack(version, a);
  spec.AddMember("versions", versions, a);
  doc.AddMember("spec", spec, a);
  return doc;
}

}  // namespace banlieue::api
