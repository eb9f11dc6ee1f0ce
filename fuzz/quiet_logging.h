// Fuzz targets whose parsers log: the log goes off once per process, so a run prints only what
// libFuzzer reports.
#pragma once

#include "host/common/logging.h"

namespace banlieue::fuzz {

inline void silenceLoggingOnce() {
  static const bool silenced = [] {
    common::configureLogging(spdlog::level::off, common::LogFormat::kText);
    return true;
  }();
  (void)silenced;
}

}  // namespace banlieue::fuzz
