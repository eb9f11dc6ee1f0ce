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

  const auto& overlay = image.spec.iso_overlay;
  const auto& trusted = image.spec.trusted_boot;
  if (overlay && trusted) {
    return error(Code::kInvalidArgument, "TrustedBootWithIsoOverlay",
                 "spec.isoOverlay and spec.trustedBoot are both set: a build lays an overlay on a "
                 "plain ISO or signs a UKI ISO, not both; remove one");
  }
  if (trusted) {
    if (trusted->secret_ref.name.empty()) {
      return error(Code::kInvalidArgument, "TrustedBootInvalid",
                   "spec.trustedBoot.secretRef.name is required");
    }
    plan.kind = "iso";  // a UKI is always an ISO here
    plan.trusted_boot_secret = trusted->secret_ref.name;
    plan.secret_keys_needed[plan.trusted_boot_secret] = trustedBootKeyNames();
  }
  if (overlay) {
    auto invalid = [](const std::string& what) {
      return error(Code::kInvalidArgument, "IsoOverlayInvalid", "spec.isoOverlay: " + what);
    };
    if (plan.kind != "iso") {
      return invalid("provider class '" + plan.provider_class +
                     "' gets a cloud image, which has no ISO to lay files on");
    }
    if (overlay->secret_ref.name.empty()) return invalid("secretRef.name is required");
    plan.overlay_secret = overlay->secret_ref.name;
    auto& keys = plan.secret_keys_needed[plan.overlay_secret];
    for (const auto& f : overlay->files) {
      std::string path = f.path;
      while (!path.empty() && path.front() == '/') path.erase(0, 1);
      bool escapes = path.empty() || path == ".." || path.rfind("../", 0) == 0 ||
                     path.find("/../") != std::string::npos ||
                     (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0);
      if (f.key.empty()) return invalid("a file has no key");
      if (escapes) return invalid("path '" + f.path + "' of key " + f.key + " leaves the ISO");
      plan.overlay_files.emplace_back(f.key, path);
      keys.push_back(f.key);
    }
  }
  return plan;
}

std::vector<std::string> missingSecretKeys(const rapidjson::Value& secret,
                                           const std::vector<std::string>& wanted) {
  std::vector<std::string> missing;
  for (const auto& key : wanted) {
    bool found = false;
    for (const char* field : {"data", "stringData"}) {
      const auto* data = json::member(&secret, field);
      if (data != nullptr && data->IsObject() && data->HasMember(key.c_str())) found = true;
    }
    if (!found) missing.push_back(key);
  }
  return missing;
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
  std::string shape = plan.import_from + "\n" + plan.kind + "\n" + plan.arch + "\n" +
                      (plan.merge_cloud_config ? mergedSecretName(image.metadata.name) : "");
  // Added only when set, so images without them keep the hash (and the build) they had.
  if (!plan.overlay_secret.empty()) {
    shape.append("\noverlay ").append(plan.overlay_secret);
    for (const auto& [key, path] : plan.overlay_files) {
      shape.append("\n").append(key).append("=").append(path);
    }
  }
  if (!plan.trusted_boot_secret.empty()) shape.append("\nuki ").append(plan.trusted_boot_secret);
  return fnvHex(shape);
}

std::string osArtifactManifest(const api::VMImage& image, const BuildPlan& plan,
                               const std::string& build_namespace,
                               const std::string& overlay_copy_image) {
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
  Value volumes(rapidjson::kArrayType);
  auto secretVolume = [&](const char* name, const std::string& secret,
                          const std::vector<std::pair<std::string, std::string>>& items) {
    Value source(rapidjson::kObjectType);
    add(source, "secretName", secret, a);
    if (!items.empty()) {
      Value list(rapidjson::kArrayType);
      for (const auto& [key, path] : items) {
        Value item(rapidjson::kObjectType);
        add(item, "key", key, a);
        add(item, "path", path, a);
        list.PushBack(item, a);
      }
      add(source, "items", std::move(list), a);
    }
    Value volume(rapidjson::kObjectType);
    add(volume, "name", std::string(name), a);
    add(volume, "secret", std::move(source), a);
    volumes.PushBack(volume, a);
  };
  if (!plan.trusted_boot_secret.empty()) {
    Value uki(rapidjson::kObjectType);
    add(uki, "iso", Value(true), a);
    add(uki, "keysVolume", std::string(kTrustedBootKeysVolume), a);
    add(artifacts, "uki", std::move(uki), a);
    secretVolume(kTrustedBootKeysVolume, plan.trusted_boot_secret, {});
  } else {
    add(artifacts, plan.kind == "iso" ? "iso" : "cloudImage", Value(true), a);
  }
  if (!plan.overlay_secret.empty()) {
    // A Secret volume's files are symlinks into a hidden directory, which the ISO build copies
    // as links: an importer (an init container of kairos' build pod) copies them, dereferenced,
    // into a plain volume, and that one is the overlay.
    secretVolume(kOverlaySourceVolume, plan.overlay_secret, plan.overlay_files);
    Value copy(rapidjson::kObjectType);
    add(copy, "name", std::string(kOverlayVolume), a);
    add(copy, "emptyDir", Value(rapidjson::kObjectType), a);
    volumes.PushBack(copy, a);
    add(artifacts, "overlayISOVolume", std::string(kOverlayVolume), a);

    Value importer(rapidjson::kObjectType);
    add(importer, "name", std::string("iso-overlay-materialize"), a);
    add(importer, "image", overlay_copy_image, a);
    Value command(rapidjson::kArrayType);
    for (const char* word : {"cp", "-RL", "/overlay-source/.", "/overlay/"}) {
      command.PushBack(Value(word, a), a);
    }
    add(importer, "command", std::move(command), a);
    Value mounts(rapidjson::kArrayType);
    auto mount = [&](const char* volume, const char* path, bool read_only) {
      Value m(rapidjson::kObjectType);
      add(m, "name", std::string(volume), a);
      add(m, "mountPath", std::string(path), a);
      add(m, "readOnly", Value(read_only), a);
      mounts.PushBack(m, a);
    };
    mount(kOverlaySourceVolume, "/overlay-source", true);
    mount(kOverlayVolume, "/overlay", false);
    add(importer, "volumeMounts", std::move(mounts), a);
    Value importers(rapidjson::kArrayType);
    importers.PushBack(importer, a);
    add(spec, "importers", std::move(importers), a);
  }
  if (!volumes.Empty()) add(spec, "volumes", std::move(volumes), a);
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
