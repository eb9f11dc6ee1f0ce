#include "plugins/proxmox/src/task_token.h"

namespace banlieue::proxmox {

std::optional<TaskToken> parseTaskToken(const std::optional<std::string>& token,
                                        std::string_view phase) {
  if (!token) return std::nullopt;
  const auto colon = token->find(':');
  if (colon == std::string::npos) return std::nullopt;
  TaskToken out{token->substr(0, colon), token->substr(colon + 1), {}};
  out.node = upidNode(out.upid);
  if (out.phase.empty() || out.node.empty()) return std::nullopt;
  if (!phase.empty() && out.phase != phase) return std::nullopt;
  return out;
}

TaskPoll pollTask(const PveClient& client, const TaskToken& token, Deadline deadline) {
  TaskStatus status;
  try {
    status = client.task(token.node, token.upid, deadline);
  } catch (const PveError& e) {
    if (!e.isMissing()) throw;
    return {TaskPoll::State::kForgotten, {}};
  }
  if (status.running) return {TaskPoll::State::kRunning, {}};
  if (!status.ok()) return {TaskPoll::State::kFailed, status.exit_status};
  return {TaskPoll::State::kSucceeded, {}};
}

sdk::Status taskInProgress(sdk::Reply& reply, const TaskToken& token, const std::string& what,
                           std::string_view reason) {
  reply.setOperation(token.text(), what);
  reply.requeueAfter(kTaskPoll);
  return sdk::Status::inProgress(std::string(reason), what);
}

void endTask(sdk::Reply& reply) {
  reply.body().RemoveMember("operation");
}

void endFailedTask(sdk::Reply& reply) {
  reply.setOperation("settled", "the previous task failed");
}

sdk::Status taskFailed(const TaskToken& token, const std::string& what,
                       const std::string& exit_status) {
  return {sdk::Code::kAborted, "TaskFailed",
          what + " failed on node " + token.node + ": " + exit_status};
}

std::optional<sdk::Status> awaitTask(const PveClient& client, const TaskToken& token,
                                     const std::string& what, Deadline deadline, sdk::Reply& reply,
                                     std::string_view reason) {
  const TaskPoll polled = pollTask(client, token, deadline);
  switch (polled.state) {
    case TaskPoll::State::kRunning: return taskInProgress(reply, token, what, reason);
    case TaskPoll::State::kFailed:
      endFailedTask(reply);
      return taskFailed(token, what, polled.exit_status);
    case TaskPoll::State::kSucceeded:
    case TaskPoll::State::kForgotten: break;
  }
  endTask(reply);
  return std::nullopt;
}

}  // namespace banlieue::proxmox
