#include "host/common/log_context.h"

#include <random>

namespace banlieue::common {
namespace {

thread_local const LogContext* current = nullptr;

}  // namespace

const LogContext* currentLogContext() {
  return current;
}

ScopedLogContext::ScopedLogContext(LogContext context)
    : context_(std::move(context)), previous_(current) {
  current = &context_;
}

ScopedLogContext::~ScopedLogContext() {
  current = previous_;
}

std::string newReconcileId() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  uint64_t bits = engine();
  std::string id(16, '0');
  for (char& c : id) {
    c = kHex[bits & 0xf];
    bits >>= 4;
  }
  return id;
}

}  // namespace banlieue::common
