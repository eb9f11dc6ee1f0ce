// `banlieue plugin check`: loads a plugin in a child process and drives every slot it offers
// with sample payloads, judging each answer against the contract (known code, CamelCase
// reason, message on failure, reply bodies valid against sdk/schemas/, returned before the
// deadline, IN_PROGRESS carries an operation token, finalize idempotent, only
// banlieue_provider_v1_init exported, every slot describe claims present in the table).
// A crash or a hang fails the step it happened in; the check then goes on in a fresh child
// process, so every later step still runs and is listed.
//
// With a config (--config) the check is strict (docs/adr/0022-strict-plugin-check.md): the
// backend is the author's own, so every slot describe claims must work, instance_create
// and reconcile of each sample must succeed, a second reconcile of the same uid must answer
// the same providerID, and OK without progress fails after kOkWithoutProgressLimit answers.
#pragma once

#include <chrono>
#include <cstdint>
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
  // How long one long operation (a create, a delete, an import) may stay IN_PROGRESS.
  std::chrono::milliseconds create_timeout{std::chrono::minutes(15)};

  bool strict() const { return config_file.has_value(); }
};

// Polling an IN_PROGRESS (or not yet finished OK) operation: the plugin's requeue_after_ms
// hint when it gives one, else kFirstPollBackoff doubled per poll; never more than
// kMaxPollInterval, so a create of many minutes is polled like the host would, and never less
// than kMinPollInterval.
inline constexpr std::chrono::milliseconds kMinPollInterval{10};
inline constexpr std::chrono::milliseconds kFirstPollBackoff{500};
inline constexpr std::chrono::milliseconds kMaxPollInterval{30000};
// Strict mode: consecutive OK answers without progress (no change of providerID or
// initialization.provisioned, and not yet both set) before reconcile fails.
inline constexpr int kOkWithoutProgressLimit = 3;

// The wait before poll number `poll` (0 for the first re-call) given the plugin's hint in
// milliseconds (<= 0: none).
std::chrono::milliseconds pollDelay(int64_t hint_ms, int poll);

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
