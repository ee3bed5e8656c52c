// Basic vocabulary types: time (seconds as double), ids, byte counts, priorities.
// Plain values; no thread-safety concerns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace prima {

using Time = double;      // seconds on the runtime's clock (simulated or steady)
using Duration = double;  // seconds
using Bytes = double;     // byte counts as double (models reach 1e13 and beyond)

using RequestId = std::uint64_t;
using ReplicaId = int;
using DeviceId = int;  // global GPU index in the topology: node * gpus_per_node + local
using TimerId = std::uint64_t;

inline constexpr TimerId kNoTimer = 0;

enum class Priority : int { kHigh = 0, kNormal = 1, kLow = 2 };
inline constexpr int kNumPriorities = 3;

const char* priority_name(Priority p);
// Parses "high" | "normal" | "low"; returns false on anything else.
bool parse_priority(std::string_view s, Priority* out);

}  // namespace prima
