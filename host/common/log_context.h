// The object a thread is working on, for the log lines it writes meanwhile. The controller's
// worker sets it around each reconcile, so every line of that reconcile — the reconciler's, the
// runtime's, a plugin's through the host's log callback — carries the controller, the object's
// namespace and name, and one id per reconcile: `kubectl logs ... | jq 'select(.name=="web-1")'`
// gives one object's history. Keys as controller-runtime names them.
#pragma once

#include <string>

namespace banlieue::common {

struct LogContext {
  std::string controller;
  std::string namespace_;
  std::string name;
  std::string reconcile_id;
};

// The context of the calling thread, or nullptr outside any reconcile.
const LogContext* currentLogContext();

// Sets the calling thread's context for its lifetime (and restores the one before).
class ScopedLogContext {
 public:
  explicit ScopedLogContext(LogContext context);
  ~ScopedLogContext();
  ScopedLogContext(const ScopedLogContext&) = delete;
  ScopedLogContext& operator=(const ScopedLogContext&) = delete;

 private:
  LogContext context_;
  const LogContext* previous_;
};

// A fresh reconcile id: 16 random hex digits (unique enough to tell reconciles apart in logs).
std::string newReconcileId();

}  // namespace banlieue::common
