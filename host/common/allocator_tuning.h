#pragma once

namespace banlieue::common {

// Stops glibc from returning the top of the heap to the kernel after every request.
// Every plugin call builds a few RapidJSON documents whose pools take 64 KiB chunks; with
// glibc's default 128 KiB trim threshold each call grew and shrank the heap with brk(2),
// which cost more than the JSON work itself (measured in bench/abi_call_bench.cc). It also caps
// glibc's arenas at two, which each keep free memory of their own (bench/README.md, the
// 10,000-VM run of 2026-12-06 afternoon: controller RSS 96 -> 88 MB). Called
// once at start-up by the binary and by benchmarks, so they measure the same process.
void tuneAllocatorForServer();

}  // namespace banlieue::common
