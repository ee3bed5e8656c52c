#include "engine/core/types.h"

namespace prima {

const char* priority_name(Priority p) {
  switch (p) {
    case Priority::kHigh:
      return "high";
    case Priority::kNormal:
      return "normal";
    case Priority::kLow:
      return "low";
  }
  return "normal";
}

bool parse_priority(std::string_view s, Priority* out) {
  if (s == "high")
    *out = Priority::kHigh;
  else if (s == "normal")
    *out = Priority::kNormal;
  else if (s == "low")
    *out = Priority::kLow;
  else
    return false;
  return true;
}

}  // namespace prima
