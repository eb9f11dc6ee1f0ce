#include "host/roles/images/import_job.h"

#include "host/common/fnv_hash.h"
#include "host/roles/images/import_exit.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>
#include <rapidjson/document.h>

#include <cctype>
#include <cstdio>

namespace banlieue::roles::images {
namespace {

namespace json = sdk::json;
using rapidjson::Value;

}  // namespace

std::string jobNameHash(const std::string& text) {
  const uint64_t h = common::fnv1a64(text, common::kFnv1a64TruncatedBasis);
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 10);
}

std::string jobNamePart(const std::string& text, size_t max) {
  std::string out;
  for (char c : text) {
    if (out.size() >= max) break;
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0) {
      out.push_back(static_cast<char>(std::tolower(u)));
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

namespace {

class Builder {
 public:
  Builder() : doc_(rapidjson::kObjectType) {}
  rapidjson::Document& doc() { return doc_; }
  Value str(const std::string& s) { return json::stringValue(s, doc_.GetAllocator()); }
  Value obj() { return Value(rapidjson::kObjectType); }
  Value arr() { return Value(rapidjson::kArrayType); }
  void add(Value& target, const char* key, Value value) {
    target.AddMember(Value(key, doc_.GetAllocator()), value, doc_.GetAllocator());
  }
  void add(Value& target, const char* key, const std::string& value) {
    add(target, key, str(value));
  }
  void push(Value& array, Value value) { array.PushBack(value, doc_.GetAllocator()); }

 private:
  rapidjson::Document doc_;
};

bool isCamelCase(const std::string& s) {
  if (s.empty() || s.size() > 128 || std::isupper(static_cast<unsigned char>(s.front())) == 0) {
    return false;
  }
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

// The import container's last termination: state.terminated, else lastState.terminated.
const Value* importTermination(const Value* pod) {
  if (pod == nullptr) return nullptr;
  const auto* statuses = json::find(pod, "status.containerStatuses");
  if (statuses == nullptr || !statuses->IsArray()) return nullptr;
  for (const auto& s : statuses->GetArray()) {
    if (json::stringOr(&s, "name") != kImportContainerName) continue;
    if (const auto* t = json::find(&s, "state.terminated"); t != nullptr && t->IsObject()) {
      return t;
    }
    if (const auto* t = json::find(&s, "lastState.terminated"); t != nullptr && t->IsObject()) {
      return t;
    }
  }
  return nullptr;
}

}  // namespace

std::string importLabelValue(const std::string& text) {
  bool valid = !text.empty() && text.size() <= 63 &&
               std::isalnum(static_cast<unsigned char>(text.front())) &&
               std::isalnum(static_cast<unsigned char>(text.back()));
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) == 0 && c != '-' && c != '_' && c != '.') valid = false;
  }
  return valid ? text : "h-" + jobNameHash(text);
}

std::string importJobName(const ImportJobParams& p) {
  std::string identity = p.image_name + "\n" + p.provider_namespace + "\n" + p.provider_name +
                         "\n" + p.failure_domain + "\n" + p.os_artifact_uid + "\n" +
                         p.artifact_file + "\n" + p.checksum + "\n" + p.generation_suffix;
  // Only a target extends the identity: a Job without one keeps the name it always had.
  if (!p.target.empty()) identity += "\ntarget:" + p.target;
  std::string prefix = jobNamePart(p.image_name, 40);
  return "import-" + (prefix.empty() ? std::string() : prefix + "-") + jobNameHash(identity);
}

StatusOr<std::string> importJob(const ImportJobParams& p) {
  auto missing = [](const char* field) {
    return error(Code::kInvalidArgument, "ImportJobInvalid",
                 std::string("import Job: ") + field + " is required");
  };
  if (p.image_name.empty()) return missing("image_name");
  if (p.provider_name.empty() || p.provider_namespace.empty()) return missing("provider");
  if (p.backend.empty()) return missing("backend");
  if (p.failure_domain.empty()) return missing("failure_domain");
  if (p.artifact_file.empty()) return missing("artifact_file");
  if (p.artifact_format.empty()) return missing("artifact_format");
  if (p.checksum.empty()) return missing("checksum (imports fail closed)");
  if (p.pvc_name.empty() == p.artifacts_host_path.empty()) {
    return error(Code::kInvalidArgument, "ImportJobInvalid",
                 "import Job: exactly one of pvc_name and artifacts_host_path is required");
  }
  if (p.artifact_file.find('/') != std::string::npos || p.artifact_file == "..") {
    return error(Code::kInvalidArgument, "ImportJobInvalid",
                 "import Job: artifact_file '" + p.artifact_file + "' must be a plain file name");
  }

  Builder b;
  auto& job = b.doc();
  b.add(job, "apiVersion", std::string("batch/v1"));
  b.add(job, "kind", std::string("Job"));

  Value labels = b.obj();
  b.add(labels, "app.kubernetes.io/name", std::string("banlieue"));
  b.add(labels, "app.kubernetes.io/component", std::string("image-import"));
  b.add(labels, "banlieue.io/vmimage", importLabelValue(p.image_name));
  b.add(labels, "banlieue.io/provider", importLabelValue(p.provider_name));
  b.add(labels, "banlieue.io/provider-namespace", importLabelValue(p.provider_namespace));
  Value pod_labels(labels, job.GetAllocator());

  Value annotations = b.obj();
  b.add(annotations, "banlieue.io/vmimage", p.image_name);
  b.add(annotations, "banlieue.io/provider", p.provider_namespace + "/" + p.provider_name);
  b.add(annotations, "banlieue.io/failure-domain", p.failure_domain);
  if (!p.target.empty()) b.add(annotations, kImportTargetAnnotation, p.target);
  ImportJobParams base = p;
  base.generation_suffix.clear();
  b.add(annotations, kImportBaseAnnotation, importJobName(base));
  if (!p.generation_suffix.empty()) {
    b.add(annotations, kForceReimportAnnotation, p.generation_suffix);
  }

  Value metadata = b.obj();
  b.add(metadata, "name", importJobName(p));
  b.add(metadata, "namespace", p.job_namespace);
  b.add(metadata, "labels", std::move(labels));
  b.add(metadata, "annotations", std::move(annotations));
  Value owners = b.arr();
  // Neither owner controls the Job (the provider runtime does); the garbage collector removes it
  // once every owner is gone: the VMImage's deletion takes the OSArtifact with it.
  if (!p.image_uid.empty()) {
    Value owner = b.obj();
    b.add(owner, "apiVersion", std::string("banlieue.io/v1alpha1"));
    b.add(owner, "kind", std::string("VMImage"));
    b.add(owner, "name", p.image_name);
    b.add(owner, "uid", p.image_uid);
    b.add(owner, "controller", Value(false));
    b.add(owner, "blockOwnerDeletion", Value(false));
    b.push(owners, std::move(owner));
  }
  if (!p.os_artifact_name.empty() && !p.os_artifact_uid.empty()) {
    Value owner = b.obj();
    b.add(owner, "apiVersion", std::string("build.kairos.io/v1alpha2"));
    b.add(owner, "kind", std::string("OSArtifact"));
    b.add(owner, "name", p.os_artifact_name);
    b.add(owner, "uid", p.os_artifact_uid);
    b.add(owner, "controller", Value(false));
    b.add(owner, "blockOwnerDeletion", Value(false));
    b.push(owners, std::move(owner));
  }
  if (!owners.Empty()) b.add(metadata, "ownerReferences", std::move(owners));
  b.add(job, "metadata", std::move(metadata));

  std::string artifact_path = std::string(kArtifactsMountPath) + "/" + p.artifact_file;
  std::vector<std::string> args = {
      "--log-level",    p.log_level,       "image-import",
      "--plugin-dir",   p.plugin_dir,      "--backend",
      p.backend,        "--provider",      p.provider_namespace + "/" + p.provider_name,
      "--image",        p.image_name,      "--failure-domain",
      p.failure_domain, "--artifact",      artifact_path,
      "--format",       p.artifact_format, "--checksum",
      p.checksum};
  if (!p.target.empty()) {
    args.emplace_back("--target");
    args.push_back(p.target);
  }
  // The plugin is loaded under the class's pin here too (docs/adr/0025).
  if (!p.plugin_sha256.empty()) {
    args.emplace_back("--plugin-sha256");
    args.push_back(p.plugin_sha256);
  }
  Value arg_values = b.arr();
  for (const auto& a : args) b.push(arg_values, b.str(a));

  Value mounts = b.arr();
  Value volumes = b.arr();
  {
    Value mount = b.obj();
    b.add(mount, "name", std::string("artifacts"));
    b.add(mount, "mountPath", std::string(kArtifactsMountPath));
    b.add(mount, "readOnly", Value(true));
    b.push(mounts, std::move(mount));
    Value volume = b.obj();
    b.add(volume, "name", std::string("artifacts"));
    if (!p.pvc_name.empty()) {
      Value pvc = b.obj();
      b.add(pvc, "claimName", p.pvc_name);
      b.add(pvc, "readOnly", Value(true));
      b.add(volume, "persistentVolumeClaim", std::move(pvc));
    } else {
      Value host = b.obj();
      b.add(host, "path", p.artifacts_host_path);
      b.add(host, "type", std::string("Directory"));
      b.add(volume, "hostPath", std::move(host));
    }
    b.push(volumes, std::move(volume));
  }
  {
    // Scratch for the plugin (its backend client's credential files), in memory, small.
    Value mount = b.obj();
    b.add(mount, "name", std::string("tmp"));
    b.add(mount, "mountPath", std::string(kScratchMountPath));
    b.push(mounts, std::move(mount));
    Value empty_dir = b.obj();
    b.add(empty_dir, "medium", std::string("Memory"));
    b.add(empty_dir, "sizeLimit", std::string("16Mi"));
    Value volume = b.obj();
    b.add(volume, "name", std::string("tmp"));
    b.add(volume, "emptyDir", std::move(empty_dir));
    b.push(volumes, std::move(volume));
  }

  Value env = b.arr();
  for (const char* name : {"POD_NAME", "POD_NAMESPACE"}) {
    Value field = b.obj();
    b.add(field, "fieldPath",
          std::string(name == std::string("POD_NAME") ? "metadata.name" : "metadata.namespace"));
    Value from = b.obj();
    b.add(from, "fieldRef", std::move(field));
    Value var = b.obj();
    b.add(var, "name", std::string(name));
    b.add(var, "valueFrom", std::move(from));
    b.push(env, std::move(var));
  }
  for (const auto& [name, value] : p.proxy_env) {
    Value var = b.obj();
    b.add(var, "name", name);
    b.add(var, "value", value);
    b.push(env, std::move(var));
  }

  Value security = b.obj();
  b.add(security, "readOnlyRootFilesystem", Value(true));
  b.add(security, "allowPrivilegeEscalation", Value(false));
  Value capabilities = b.obj();
  Value drop = b.arr();
  b.push(drop, b.str("ALL"));
  b.add(capabilities, "drop", std::move(drop));
  b.add(security, "capabilities", std::move(capabilities));

  Value container = b.obj();
  b.add(container, "name", std::string(kImportContainerName));
  b.add(container, "image", p.container_image);
  b.add(container, "imagePullPolicy", std::string("IfNotPresent"));
  b.add(container, "args", std::move(arg_values));
  b.add(container, "env", std::move(env));
  b.add(container, "volumeMounts", std::move(mounts));
  b.add(container, "securityContext", std::move(security));
  b.add(container, "terminationMessagePath", std::string("/dev/termination-log"));
  b.add(container, "terminationMessagePolicy", std::string("FallbackToLogsOnError"));
  Value containers = b.arr();
  b.push(containers, std::move(container));

  // The image's user and group (65532, as its USER says): without runAsGroup a runtime gives
  // a user the image's /etc/passwd does not list the group 0.
  Value pod_security = b.obj();
  b.add(pod_security, "runAsNonRoot", Value(true));
  b.add(pod_security, "runAsUser", Value(int64_t{65532}));
  b.add(pod_security, "runAsGroup", Value(int64_t{65532}));
  Value seccomp = b.obj();
  b.add(seccomp, "type", std::string("RuntimeDefault"));
  b.add(pod_security, "seccompProfile", std::move(seccomp));

  Value pod_spec = b.obj();
  b.add(pod_spec, "serviceAccountName", p.service_account);
  b.add(pod_spec, "securityContext", std::move(pod_security));
  b.add(pod_spec, "restartPolicy", std::string("Never"));
  b.add(pod_spec, "containers", std::move(containers));
  b.add(pod_spec, "volumes", std::move(volumes));

  Value pod_meta = b.obj();
  b.add(pod_meta, "labels", std::move(pod_labels));
  Value template_ = b.obj();
  b.add(template_, "metadata", std::move(pod_meta));
  b.add(template_, "spec", std::move(pod_spec));

  Value spec = b.obj();
  b.add(spec, "backoffLimit", Value(p.backoff_limit));
  b.add(spec, "activeDeadlineSeconds", Value(p.active_deadline_seconds));
  b.add(spec, "template", std::move(template_));
  b.add(job, "spec", std::move(spec));
  return json::serialize(job);
}

bool importPodFailedForGood(const rapidjson::Value& pod) {
  const Value* terminated = importTermination(&pod);
  if (terminated == nullptr) return false;
  auto code = json::integer(terminated, "exitCode");
  return code && *code > 0 && !importExitRetryable(static_cast<int>(*code));
}

ImportOutcome importOutcome(const rapidjson::Value& job, const rapidjson::Value* pod) {
  ImportOutcome out;
  const Value* terminated = importTermination(pod);
  std::string term_reason, term_message;
  if (terminated != nullptr) {
    if (auto code = json::integer(terminated, "exitCode")) out.exit_code = static_cast<int>(*code);
    // The termination message is {"reason","message","resolvedRef"} from image-import; with
    // FallbackToLogsOnError it can also be the log tail, which is kept as the message.
    std::string text = json::stringOr(terminated, "message");
    rapidjson::Document doc;
    if (!text.empty() && !doc.Parse(text.data(), text.size()).HasParseError() && doc.IsObject()) {
      term_reason = json::stringOr(&doc, "reason");
      term_message = json::stringOr(&doc, "message");
      out.resolved_ref = json::stringOr(&doc, "resolvedRef");
    } else {
      term_message = text;
    }
  }
  if (runtime::trueCondition(job, "Complete") != nullptr) {
    out.state = ImportOutcome::State::kSucceeded;
    out.reason = "Imported";
    out.message = term_message.empty() ? "imported" : term_message;
    out.exit_code = 0;
    return out;
  }
  // A pod that failed for good decides at once: the Job's further attempts, after its back-off
  // (10 s, then 20 s), would only say it again.
  const auto* failed_condition = runtime::trueCondition(job, "Failed");
  std::string cond_reason, cond_message;
  if (failed_condition != nullptr) {
    cond_reason = json::stringOr(failed_condition, "reason");
    cond_message = json::stringOr(failed_condition, "message");
  }
  if (failed_condition != nullptr || (pod != nullptr && importPodFailedForGood(*pod))) {
    out.state = ImportOutcome::State::kFailed;
    if (out.exit_code >= 0) {
      out.reason = reasonForImportExit(out.exit_code);
      out.retryable = importExitRetryable(out.exit_code);
      // A plugin's own reason is more specific than the exit status's stage.
      if (isCamelCase(term_reason)) out.reason = term_reason;
    } else if (cond_reason == "DeadlineExceeded") {
      out.reason = "ImportTimedOut";
      out.retryable = true;
    } else {
      out.reason = "ImportFailed";
      out.retryable = true;
    }
    out.message = !term_message.empty() ? term_message
                  : !cond_message.empty()
                      ? cond_message
                      : "import Job failed with exit status " + std::to_string(out.exit_code);
    return out;
  }
  out.state = ImportOutcome::State::kRunning;
  out.reason = "Importing";
  int64_t failed = json::integer(&job, "status.failed").value_or(0);
  out.message = failed > 0 ? "import Job retrying after " + std::to_string(failed) +
                                 " failed attempt(s); last: " + reasonForImportExit(out.exit_code)
                           : "import Job running";
  return out;
}

std::string zoneRowName(const std::string& failure_domain, const std::string& target) {
  return target.empty() ? failure_domain : failure_domain + "/" + target;
}

api::ImageZone zoneRow(const std::string& failure_domain, const ImportOutcome& outcome,
                       const std::string& target) {
  api::ImageZone zone;
  zone.name = zoneRowName(failure_domain, target);
  if (!target.empty()) {
    zone.failure_domain = failure_domain;
    zone.target = target;
  }
  zone.ready = outcome.state == ImportOutcome::State::kSucceeded;
  zone.resolved_ref = outcome.resolved_ref;
  zone.reason = outcome.reason;
  zone.message = outcome.message;
  return zone;
}

}  // namespace banlieue::roles::images
