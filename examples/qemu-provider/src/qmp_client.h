// A QMP (QEMU Machine Protocol) session over QEMU's unix socket: the greeting, capabilities
// negotiation, then one command at a time, every read and write bounded by a deadline. QEMU
// serves one QMP client at a time, so a session is opened per call and closed with it.
#pragma once

#include <banlieue/sdk/json.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "process.h"

namespace qemu_provider {

class QmpClient {
 public:
  // Connects and negotiates capabilities. Throws banlieue::sdk::Error: UNAVAILABLE with reason
  // QmpUnreachable when nobody listens on `socket`, DEADLINE_EXCEEDED (QmpTimeout) when QEMU
  // does not answer by `deadline`.
  QmpClient(const std::filesystem::path& socket, Deadline deadline);
  ~QmpClient();
  QmpClient(const QmpClient&) = delete;
  QmpClient& operator=(const QmpClient&) = delete;

  // Runs `command` (with `arguments`, a JSON object, when not empty) and returns the reply's
  // "return" value; QEMU's "error" is thrown as FAILED_PRECONDITION, reason QmpCommandFailed.
  rapidjson::Document execute(std::string_view command, std::string_view arguments = {});

  // query-status's "status": "running", "paused", "shutdown", ...
  std::string status();

  // Sends `quit`. QEMU may close the socket before its reply arrives; that counts as done.
  void quit();

 private:
  void send(const std::string& line);
  rapidjson::Document receive();  // the next message that is not an event

  int fd_ = -1;
  Deadline deadline_;
  std::string buffer_;
};

}  // namespace qemu_provider
