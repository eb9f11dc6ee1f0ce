#include "host/roles/images/checksum_job.h"

#include "host/common/logging.h"
#include "host/roles/images/import_job.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>
#include <rapidjson/document.h>

namespace banlieue::roles::images {
namespace {

namespace json = sdk::json;

std::string quoted(const std::string& text) {
  return "\"" + common::jsonEscape(text) + "\"";
}

// The checksum container's termination message, parsed; null document when there is none.
rapidjson::Document terminationMessage(const rapidjson::Value* pod) {
  rapidjson::Document doc;
  if (pod == nullptr) return doc;
  const auto* statuses = json::find(pod, "status.containerStatuses");
  if (statuses == nullptr || !statuses->IsArray()) return doc;
  for (const auto& s : statuses->GetArray()) {
    if (json::stringOr(&s, "name") != kChecksumContainerName) continue;
    for (const char* where : {"state.terminated.message", "lastState.terminated.message"}) {
      std::string text = json::stringOr(&s, where);
      if (text.empty()) continue;
      rapidjson::Document parsed;
      parsed.Parse(text.data(), text.size());
      if (!parsed.HasParseError() && parsed.IsObject()) return parsed;
    }
  }
  return doc;
}

}  // namespace

std::string checksumJobName(const ChecksumJobParams& p) {
  std::string prefix = jobNamePart(p.image_name, 40);
  return "checksum-" + (prefix.empty() ? std::string() : prefix + "-") +
         jobNameHash(p.image_name + "\n" + p.os_artifact_uid + "\n" + p.artifact_file + "\n" +
                     p.algorithm);
}

StatusOr<std::string> checksumJob(const ChecksumJobParams& p) {
  auto invalid = [](const std::string& what) {
    return error(Code::kInvalidArgument, "ChecksumJobInvalid", "checksum Job: " + what);
  };
  if (p.image_name.empty() || p.image_uid.empty()) return invalid("the VMImage is required");
  if (p.os_artifact_name.empty() || p.os_artifact_uid.empty()) {
    return invalid("the OSArtifact is required");
  }
  if (p.pvc_name.empty()) return invalid("the artifacts PVC is required");
  if (p.artifact_file.empty() || p.artifact_file.find('/') != std::string::npos ||
      p.artifact_file == "." || p.artifact_file == "..") {
    return invalid("artifact file '" + p.artifact_file + "' must be a plain file name");
  }
  if (p.algorithm != "sha256" && p.algorithm != "sha512") {
    return invalid("algorithm '" + p.algorithm + "' is not sha256 or sha512");
  }
  if (p.container_image.empty() || p.job_namespace.empty()) {
    return invalid("the image and namespace are required");
  }

  auto owner = [](const char* api_version, const char* kind, const std::string& name,
                  const std::string& uid) {
    return std::string(R"({"apiVersion":")") + api_version + R"(","kind":")" + kind +
           R"(","name":)" + quoted(name) + R"(,"uid":)" + quoted(uid) +
           R"(,"controller":false,"blockOwnerDeletion":false})";
  };
  std::string labels = R"({"app.kubernetes.io/name":"banlieue","app.kubernetes.io/component":")" +
                       std::string(kChecksumComponent) + R"("})";
  // The pod may not talk to the API (no token) and writes nothing but its termination message.
  std::string text =
      R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":)" + quoted(checksumJobName(p)) +
      R"(,"namespace":)" + quoted(p.job_namespace) + R"(,"labels":)" + labels +
      R"(,"annotations":{"banlieue.io/vmimage":)" + quoted(p.image_name) +
      R"(},"ownerReferences":[)" +
      owner("banlieue.io/v1alpha1", "VMImage", p.image_name, p.image_uid) + "," +
      owner("build.kairos.io/v1alpha2", "OSArtifact", p.os_artifact_name, p.os_artifact_uid) +
      R"(]},"spec":{"backoffLimit":)" + std::to_string(p.backoff_limit) +
      R"(,"activeDeadlineSeconds":)" + std::to_string(p.active_deadline_seconds) +
      R"(,"template":{"metadata":{"labels":)" + labels +
      R"(},"spec":{"restartPolicy":"Never","automountServiceAccountToken":false,)"
      R"("enableServiceLinks":false,)"
      R"("securityContext":{"runAsNonRoot":true,"runAsUser":65532,"runAsGroup":65532,)"
      R"("seccompProfile":{"type":"RuntimeDefault"}},)"
      R"("containers":[{"name":")" +
      std::string(kChecksumContainerName) + R"(","image":)" + quoted(p.container_image) +
      R"(,"imagePullPolicy":"IfNotPresent","args":["--log-level",)" + quoted(p.log_level) +
      R"(,"image-checksum","--file",)" + quoted("/artifacts/" + p.artifact_file) +
      R"(,"--algorithm",)" + quoted(p.algorithm) +
      R"(],"volumeMounts":[{"name":"artifacts","mountPath":"/artifacts","readOnly":true}],)"
      R"("securityContext":{"readOnlyRootFilesystem":true,"allowPrivilegeEscalation":false,)"
      R"("capabilities":{"drop":["ALL"]}},)"
      R"("terminationMessagePath":"/dev/termination-log",)"
      R"("terminationMessagePolicy":"FallbackToLogsOnError"}],)"
      R"("volumes":[{"name":"artifacts","persistentVolumeClaim":{"claimName":)" +
      quoted(p.pvc_name) + R"(,"readOnly":true}}]}}}})";
  // Parsed once here so a mistake in the text above is a test failure, not an API error.
  rapidjson::Document check;
  check.Parse(text.data(), text.size());
  if (check.HasParseError()) return invalid("internal error: the manifest is not JSON");
  return text;
}

ChecksumOutcome checksumOutcome(const rapidjson::Value& job, const rapidjson::Value* pod) {
  ChecksumOutcome out;
  auto message = terminationMessage(pod);
  if (runtime::trueCondition(job, "Complete") != nullptr) {
    std::string checksum = message.IsObject() ? json::stringOr(&message, "checksum") : "";
    if (checksum.empty()) {
      out.state = ChecksumOutcome::State::kFailed;
      out.reason = "ChecksumJobFailed";
      out.message = "the checksum Job completed without reporting a checksum";
      return out;
    }
    out.state = ChecksumOutcome::State::kSucceeded;
    out.checksum = checksum;
    return out;
  }
  if (const auto* failed = runtime::trueCondition(job, "Failed")) {
    std::string job_message = json::stringOr(failed, "message");
    out.state = ChecksumOutcome::State::kFailed;
    out.reason = message.IsObject() ? json::stringOr(&message, "reason") : "";
    out.message = message.IsObject() ? json::stringOr(&message, "message") : "";
    if (out.reason.empty()) out.reason = "ChecksumJobFailed";
    if (out.message.empty()) {
      out.message = job_message.empty() ? "the checksum Job failed" : job_message;
    }
  }
  return out;
}

}  // namespace banlieue::roles::images
