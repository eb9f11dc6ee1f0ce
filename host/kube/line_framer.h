// The framing of a watch response: a byte stream cut into newline-terminated lines (one JSON
// event each), with a bound on how long a line may grow before it ends. Pure, so the transport
// feeds it whatever chunks the network delivers and the fuzz target feeds it arbitrary bytes.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace banlieue::kube {

class LineFramer {
 public:
  enum class Result {
    kMore,     // every complete line was handed over; feed more
    kStopped,  // on_line returned false
    kTooLong,  // over max_line bytes without a line end: the stream must be cut
  };

  explicit LineFramer(size_t max_line) : max_line_(max_line) {}

  // Appends `bytes` and hands each complete line (without its '\n') to on_line, in order.
  Result feed(std::string_view bytes, const std::function<bool(std::string_view)>& on_line);

  // The stream ended: hands over the unterminated rest, if any.
  void finish(const std::function<bool(std::string_view)>& on_line);

  size_t pending() const { return pending_.size(); }

 private:
  size_t max_line_;
  std::string pending_;
};

}  // namespace banlieue::kube
