// `banlieue plugin check`: loads a plugin in a child process and drives every slot it offers
// with sample payloads, judging each answer against the contract (known code, CamelCase
// reason, message on failure, reply bodies valid against sdk/schemas/, returned before the
// deadline, IN_PROGRESS carries an operation token, finalize idempotent). A crash or a hang
// fails the step it happened in instead of taking the checker down.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::plugin {

struct CheckOptions {
  std::filesystem::path directory;
  std::optional<std::filesystem::path>
      config_file;  // instance_create config (Provider + credentials)
  std::chrono::milliseconds deadline{std::chrono::seconds(10)};  // per call
  std::chrono::milliseconds grace{std::chrono::seconds(2)};      // beyond the deadline before kill
  std::optional<std::string> expected_sha256;
};

enum class Verdict { kPass, kFail, kSkip };

struct CheckStep {
  std::string name;
  Verdict verdict = Verdict::kPass;
  std::string detail;
};

struct CheckReport {
  std::filesystem::path directory;
  std::vector<CheckStep> steps;
  std::string manifest_json;    // provider.json as read
  std::string descriptor_json;  // what describe answered
  std::string library;          // resolved library path

  int count(Verdict v) const;
  bool passed() const { return count(Verdict::kFail) == 0 && !steps.empty(); }
};

// Runs the full conformance check in a child process.
CheckReport checkPlugin(const CheckOptions& options);

// Loads the plugin in a child process and reports only manifest, load and describe.
CheckReport inspectPlugin(const CheckOptions& options);

std::string renderText(const CheckReport& report);
std::string renderJson(const CheckReport& report);

}  // namespace banlieue::plugin
