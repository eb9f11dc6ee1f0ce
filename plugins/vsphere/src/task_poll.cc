#include "plugins/vsphere/src/task_poll.h"

#include "plugins/vsphere/src/errors.h"

namespace banlieue::vsphere {

std::optional<TaskToken> parseTaskToken(const std::optional<std::string>& token,
                                        std::string_view phase) {
  if (!token) return std::nullopt;
  auto colon = token->find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == token->size()) return std::nullopt;
  TaskToken parsed{token->substr(0, colon), {"Task", token->substr(colon + 1)}};
  if (!phase.empty() && parsed.phase != phase) return std::nullopt;
  return parsed;
}

TaskPoll pollTask(Vim& vim, const MoRef& task, Deadline deadline) {
  TaskPoll poll;
  try {
    poll.info = vim.taskInfo(task, deadline);
  } catch (const VimFault& fault) {
    if (fault.kind() != FaultKind::kManagedObjectNotFound) throw;
    poll.state = TaskPoll::State::kForgotten;
    return poll;
  }
  switch (poll.info.state) {
    case TaskState::kQueued:
    case TaskState::kRunning: poll.state = TaskPoll::State::kRunning; break;
    case TaskState::kError: poll.state = TaskPoll::State::kFailed; break;
    case TaskState::kSuccess: poll.state = TaskPoll::State::kSucceeded; break;
  }
  return poll;
}

sdk::Status taskInProgress(sdk::Reply& reply, const TaskToken& token, std::string_view reason,
                           const std::string& what, std::chrono::milliseconds poll,
                           const std::string& message) {
  reply.setOperation(token.text(), what);
  reply.requeueAfter(poll);
  return sdk::Status::inProgress(std::string(reason), message.empty() ? what : message);
}

std::optional<sdk::Status> awaitTask(Vim& vim, const TaskToken& token, std::string_view reason,
                                     const std::string& what, std::chrono::milliseconds poll,
                                     Deadline deadline, sdk::Reply& reply, MoRef* result) {
  TaskPoll polled = pollTask(vim, token.task, deadline);
  switch (polled.state) {
    case TaskPoll::State::kRunning:
      return taskInProgress(reply, token, reason, what, poll,
                            what + " (" + std::to_string(polled.info.progress) + "%)");
    case TaskPoll::State::kFailed:
      endFailedTask(reply);
      return polled.info.error->toError(what).toStatus();
    case TaskPoll::State::kSucceeded:
      if (result != nullptr) *result = polled.info.result;
      break;
    case TaskPoll::State::kForgotten: break;
  }
  endTask(reply);
  return std::nullopt;
}

}  // namespace banlieue::vsphere
