#pragma once

#include <banlieue/provider_v1.h>

namespace banlieue {
inline constexpr const char* kVersion = BANLIEUE_VERSION;  // from CMake: project(VERSION)
inline constexpr int kAbiMajor = BANLIEUE_ABI_MAJOR;
inline constexpr int kAbiMinor = BANLIEUE_ABI_MINOR;
}  // namespace banlieue
