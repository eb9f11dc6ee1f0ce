// PVE tasks that outlive a call, one mechanism for every caller: the task's UPID travels in the
// operation token as "<phase>:<UPID>", and each later call looks at the task once through
// /nodes/{node}/tasks/{upid}/status (ABI: tasks answer IN_PROGRESS with a token; a token this
// version cannot read is treated as absent and the state derived from PVE again).
#pragma once

#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/provider.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace banlieue::proxmox {

// How often a running task is looked at.
constexpr std::chrono::milliseconds kTaskPoll{1000};

struct TaskToken {
  std::string phase;  // what the task does: "clone", "destroy", "snapshot-create", ...
  std::string upid;
  std::string node;  // the node the task runs on, from its UPID

  std::string text() const { return phase + ":" + upid; }
};

// "clone:UPID:pve1:..." -> {"clone", "UPID:pve1:...", "pve1"}; nullopt for anything else (a
// token of another version, or garbage), and for a token of another phase when `phase` is given.
std::optional<TaskToken> parseTaskToken(const std::optional<std::string>& token,
                                        std::string_view phase = {});

// What one look at a task found. kForgotten: PVE no longer knows the task (its node's task
// index was rotated or lost), so its outcome is unknown.
struct TaskPoll {
  enum class State { kRunning, kFailed, kSucceeded, kForgotten };
  State state = State::kForgotten;
  std::string exit_status;  // PVE's error text when kFailed
};
TaskPoll pollTask(const PveClient& client, const TaskToken& token, Deadline deadline);

// The IN_PROGRESS answer for a task started or still running: the token described by `what`
// (the host shows it in the Ready condition) and a poll hint.
sdk::Status taskInProgress(sdk::Reply& reply, const TaskToken& token, const std::string& what,
                           std::string_view reason = "TaskRunning");

// No task runs any more: without "operation" an OK reply clears the stored token.
void endTask(sdk::Reply& reply);
// A failed task's token is replaced by one no task carries, so the next call derives the state
// afresh instead of reading the same failed task again.
void endFailedTask(sdk::Reply& reply);

// The common policy for a pending task: still running -> IN_PROGRESS; failed -> ABORTED
// TaskFailed with PVE's exit status, the token ended; succeeded, or forgotten by PVE ->
// nullopt (the token ended, the caller goes on from the live state).
std::optional<sdk::Status> awaitTask(const PveClient& client, const TaskToken& token,
                                     const std::string& what, Deadline deadline, sdk::Reply& reply,
                                     std::string_view reason = "TaskRunning");

// ABORTED TaskFailed for a task that ended with `exit_status`.
sdk::Status taskFailed(const TaskToken& token, const std::string& what,
                       const std::string& exit_status);

}  // namespace banlieue::proxmox
