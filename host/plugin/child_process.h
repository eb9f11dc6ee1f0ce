// Runs a function in a forked child that reports back line by line over a pipe, with a
// watchdog: a plugin that crashes or hangs takes down only the child, and the parent can
// say which step it was in.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace banlieue::plugin {

struct ChildExit {
  bool timed_out = false;  // the watchdog killed it
  int exit_code = -1;      // valid when signal == 0 and !timed_out
  int signal = 0;          // the signal that ended it, if any
  int spawn_errno = 0;     // pipe or fork failed with this errno (nothing ran)
};

// A writer the child uses; each call sends one line.
class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  void line(std::string_view text) const;

 private:
  int fd_;
};

// child_main runs in the child and returns its exit code. on_line runs in the parent for
// each line and returns how long the parent may wait for the next one before killing the
// child (and anything it started: it runs in its own process group). first_wait bounds the
// wait for the first line. Call it only while the process is single-threaded (the CLI
// commands that use it are): the child runs arbitrary code after fork without exec.
ChildExit runForked(const std::function<int(const LineWriter&)>& child_main,
                    const std::function<std::chrono::milliseconds(std::string_view)>& on_line,
                    std::chrono::milliseconds first_wait);

std::string signalName(int signal);

}  // namespace banlieue::plugin
