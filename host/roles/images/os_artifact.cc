#include "host/roles/images/os_artifact.h"

#include "host/common/base64.h"
#include "host/common/fnv_hash.h"

#include <banlieue/sdk/json.h>
#include <rapidjson/document.h>

#include <cstdio>

namespace banlieue::roles::images {
namespace {

namespace json = sdk::json;
using rapidjson::Value;

std::string fnvHex(const std::string& text) {
  const uint64_t h = common::fnv1a64(text, common::kFnv1a64TruncatedBasis);
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void add(Value& target, const char* key, Value value, rapidjson::Document::AllocatorType& a) {
  target.AddMember(Value(key, a), value, a);
}
void add(Value& target, const char* key, const std::string& value,
         rapidjson::Document::AllocatorType& a) {
  target.AddMember(Value(key, a), json::stringValue(value, a), a);
}

// metadata shared by everything the imagebuilder creates for an image.
Value ownedMetadata(const api::VMImage& image, const std::string& name, const std::string& ns,
                    rapidjson::Document::AllocatorType& a) {
  Value metadata(rapidjson::kObjectType);
  add(metadata, "name", name, a);
  add(metadata, "namespace", ns, a);
  Value labels(rapidjson::kObjectType);
  add(labels, "app.kubernetes.io/managed-by", std::string("banlieue-imagebuilder"), a);
  add(metadata, "labels", std::move(labels), a);
  Value annotations(rapidjson::kObjectType);
  add(annotations, kVMImageAnnotation, image.metadata.name, a);
  add(metadata, "annotations", std::move(annotations), a);
  Value owner(rapidjson::kObjectType);
  add(owner, "apiVersion", std::string("banlieue.io/v1alpha1"), a);
  add(owner, "kind", std::string("VMImage"), a);
  add(owner, "name", image.metadata.name, a);
  add(owner, "uid", image.metadata.uid, a);
  add(owner, "controller", Value(true), a);
  // The VMImage's deletion must not wait for kairos' finalizer on the build.
  add(owner, "blockOwnerDeletion", Value(false), a);
  Value owners(rapidjson::kArrayType);
  owners.PushBack(owner, a);
  add(metadata, "ownerReferences", std::move(owners), a);
  return metadata;
}

}  // namespace

StatusOr<BuildPlan> planBuild(const api::VMImage& image) {
  const api::ImageSource* url = nullptr;
  for (const auto& s : image.spec.sources) {
    if (s.kind != "Url") continue;
    if (!s.import_from.empty()) {
      url = &s;
      break;
    }
    if (url == nullptr) url = &s;
  }
  if (url == nullptr) {
    return error(Code::kNotFound, "NoUrlSource", "the VMImage has no Url source to build");
  }
  if (url->import_from.empty()) {
    return error(Code::kInvalidArgument, "ImportFromMissing",
                 "source for provider class '" + url->provider_class +
                     "' is kind Url but has no importFrom (the Kairos OCI image to build from)");
  }
  BuildPlan plan;
  plan.provider_class = url->provider_class;
  plan.import_from = url->import_from;
  plan.arch = image.spec.architecture;
  plan.source_checksum = url->checksum;
  // vSphere imports an installer ISO into a template (unattended install); libvirt can boot
  // one as install media when each clone installs itself; everything else imports a disk.
  std::string mode = image.spec.template_ ? image.spec.template_->install_mode : "immediate";
  bool deferred = mode == "deferred" || mode == "manual";
  plan.kind = (plan.provider_class == "vsphere" || (plan.provider_class == "libvirt" && deferred))
                  ? "iso"
                  : "cloudImage";
  plan.merge_cloud_config = !image.spec.cloud_configs.empty();
  return plan;
}

std::string osArtifactName(const std::string& image_name) {
  return image_name + "-build";
}
std::string mergedSecretName(const std::string& image_name) {
  return image_name + "-cloud-config-merged";
}
std::string artifactsPvcName(const std::string& os_artifact) {
  return os_artifact + "-artifacts";
}
std::string artifactFileName(const std::string& os_artifact, const std::string& kind) {
  return os_artifact + (kind == "iso" ? ".iso" : ".raw");
}

std::string buildSpecHash(const api::VMImage& image, const BuildPlan& plan) {
  // Everything that changes what kairos builds; the merged cloud-config's content is not
  // included (kairos reads the Secret at build time) - edits to it need a force rebuild.
  return fnvHex(plan.import_from + "\n" + plan.kind + "\n" + plan.arch + "\n" +
                (plan.merge_cloud_config ? mergedSecretName(image.metadata.name) : ""));
}

std::string osArtifactManifest(const api::VMImage& image, const BuildPlan& plan,
                               const std::string& build_namespace) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  add(doc, "apiVersion", std::string(kOsArtifactApiVersion), a);
  add(doc, "kind", std::string("OSArtifact"), a);
  Value metadata = ownedMetadata(image, osArtifactName(image.metadata.name), build_namespace, a);
  metadata["annotations"].AddMember(Value(kBuildSpecHashAnnotation, a),
                                    json::stringValue(buildSpecHash(image, plan), a), a);
  add(doc, "metadata", std::move(metadata), a);
  Value spec(rapidjson::kObjectType);
  Value img(rapidjson::kObjectType);
  add(img, "ref", plan.import_from, a);
  add(spec, "image", std::move(img), a);
  Value artifacts(rapidjson::kObjectType);
  add(artifacts, "arch", plan.arch, a);
  add(artifacts, plan.kind == "iso" ? "iso" : "cloudImage", Value(true), a);
  if (plan.merge_cloud_config) {
    Value ref(rapidjson::kObjectType);
    add(ref, "name", mergedSecretName(image.metadata.name), a);
    add(ref, "key", std::string(kMergedCloudConfigKey), a);
    add(artifacts, "cloudConfigRef", std::move(ref), a);
  }
  add(spec, "artifacts", std::move(artifacts), a);
  add(doc, "spec", std::move(spec), a);
  return json::serialize(doc);
}

std::string mergedSecretManifest(const api::VMImage& image, const std::string& build_namespace,
                                 const std::string& merged_yaml) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  add(doc, "apiVersion", std::string("v1"), a);
  add(doc, "kind", std::string("Secret"), a);
  add(doc, "metadata",
      ownedMetadata(image, mergedSecretName(image.metadata.name), build_namespace, a), a);
  add(doc, "type", std::string("Opaque"), a);
  Value data(rapidjson::kObjectType);
  add(data, kMergedCloudConfigKey, common::encodeBase64(merged_yaml), a);
  add(doc, "data", std::move(data), a);
  return json::serialize(doc);
}

api::BuildArtifact buildArtifactFrom(const rapidjson::Value& os_artifact, const BuildPlan& plan) {
  api::BuildArtifact out;
  out.kind = plan.kind;
  out.os_artifact_ref = json::stringOr(&os_artifact, "metadata.name");
  out.os_artifact_uid = json::stringOr(&os_artifact, "metadata.uid");
  out.pvc_ref = artifactsPvcName(out.os_artifact_ref);
  std::string phase = json::stringOr(&os_artifact, "status.phase");
  std::string message = json::stringOr(&os_artifact, "status.message");
  if (phase == "Building" || phase == "Exporting") {
    out.phase = "Building";
    out.reason = "Building";
    out.message = message.empty()
                      ? "kairos-operator is " +
                            std::string(phase == "Building" ? "building" : "exporting") +
                            " the artifact"
                      : message;
  } else if (phase == "Ready") {
    out.phase = "Ready";
    out.reason = "Reconciled";
    out.file = artifactFileName(out.os_artifact_ref, plan.kind);
    out.message = message.empty() ? "artifact built" : message;
  } else if (phase == "Error") {
    out.phase = "Failed";
    out.reason = "BuildFailed";
    out.message =
        message.empty() ? "kairos-operator reported an error building the artifact" : message;
  } else {
    out.phase = "Pending";
    out.reason = "Pending";
    out.message = message.empty() ? "waiting for kairos-operator to start the build" : message;
  }
  return out;
}

std::string buildArtifactApply(const std::string& image_name, const api::BuildArtifact& b) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  add(doc, "apiVersion", std::string("banlieue.io/v1alpha1"), a);
  add(doc, "kind", std::string("VMImage"), a);
  Value metadata(rapidjson::kObjectType);
  add(metadata, "name", image_name, a);
  add(doc, "metadata", std::move(metadata), a);
  Value artifact(rapidjson::kObjectType);
  auto put = [&](const char* key, const std::string& value) {
    if (!value.empty()) add(artifact, key, value, a);
  };
  put("kind", b.kind);
  put("phase", b.phase);
  put("osArtifactRef", b.os_artifact_ref);
  put("osArtifactUid", b.os_artifact_uid);
  put("pvcRef", b.pvc_ref);
  put("file", b.file);
  put("reason", b.reason);
  put("message", b.message);
  put("checksum", b.checksum);
  Value status(rapidjson::kObjectType);
  add(status, "buildArtifact", std::move(artifact), a);
  add(doc, "status", std::move(status), a);
  return json::serialize(doc);
}

bool sameBuildArtifact(const api::BuildArtifact& x, const api::BuildArtifact& y) {
  return x.kind == y.kind && x.phase == y.phase && x.os_artifact_ref == y.os_artifact_ref &&
         x.os_artifact_uid == y.os_artifact_uid && x.pvc_ref == y.pvc_ref && x.file == y.file &&
         x.reason == y.reason && x.message == y.message && x.checksum == y.checksum;
}

}  // namespace banlieue::roles::images
