#include "host/kube/line_framer.h"

namespace banlieue::kube {

LineFramer::Result LineFramer::feed(std::string_view bytes,
                                    const std::function<bool(std::string_view)>& on_line) {
  pending_.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (!on_line(std::string_view(pending_).substr(start, nl - start))) {
      pending_.erase(0, nl + 1);
      return Result::kStopped;
    }
  }
  pending_.erase(0, start);
  return pending_.size() > max_line_ ? Result::kTooLong : Result::kMore;
}

void LineFramer::finish(const std::function<bool(std::string_view)>& on_line) {
  if (!pending_.empty()) on_line(pending_);
  pending_.clear();
}

}  // namespace banlieue::kube
