// Backend tasks that outlive a call, one mechanism for every caller: the Task's moref travels
// in the operation token as "<phase>:<task>", and each later call looks at the task once
// (ABI: tasks answer IN_PROGRESS with a token; a token the plugin cannot use is treated as
// absent and the state is derived from vCenter again).
#pragma once

#include "plugins/vsphere/src/vim.h"

#include <banlieue/sdk/provider.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace banlieue::vsphere {

struct TaskToken {
  std::string phase;  // what the task does: "clone", "destroy-image", "snapshot-create", ...
  MoRef task;

  std::string text() const { return phase + ":" + task.value; }
};

// "clone:task-12" -> {"clone", Task task-12}; nullopt for anything else (a token minted by
// another version, or garbage), and for a token of another phase when `phase` is given.
std::optional<TaskToken> parseTaskToken(const std::optional<std::string>& token,
                                        std::string_view phase = {});

// What one look at a task found. kForgotten: vCenter no longer knows the task (it keeps
// finished ones for minutes, and a restart forgets them all), so its outcome is unknown.
struct TaskPoll {
  enum class State { kRunning, kFailed, kSucceeded, kForgotten };
  State state = State::kForgotten;
  TaskInfo info;
};
TaskPoll pollTask(Vim& vim, const MoRef& task, Deadline deadline);

// The IN_PROGRESS answer for a task started or still running: the token described by `what`
// (the host shows it in the Ready condition), a poll hint, and `reason` with `message` (`what`
// when empty).
sdk::Status taskInProgress(sdk::Reply& reply, const TaskToken& token, std::string_view reason,
                           const std::string& what, std::chrono::milliseconds poll,
                           const std::string& message = {});

// The common policy for a pending task: still running -> IN_PROGRESS (with its progress);
// failed -> the task's fault, the token ended so the next call derives the state afresh;
// succeeded, or forgotten by vCenter -> nullopt (the token ended, the caller goes on; the
// task's result in *result when it succeeded).
std::optional<sdk::Status> awaitTask(Vim& vim, const TaskToken& token, std::string_view reason,
                                     const std::string& what, std::chrono::milliseconds poll,
                                     Deadline deadline, sdk::Reply& reply, MoRef* result = nullptr);

}  // namespace banlieue::vsphere
