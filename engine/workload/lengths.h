// Token-length distributions: parsing the "prompt_tokens"/"output_tokens" JSON values and
// drawing from a LengthSpec (fixed, uniform, lognormal, normal, empirical, sequence; clamped).
//
// A LengthSampler is an immutable value built from a validated LengthSpec; draw() takes the
// caller's generator, so one sampler may serve many streams. Not thread-safe per generator.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/workload/random.h"
#include "engine/workload/workload.h"

namespace prima::workload {

// Parses a length value: a number (fixed) or an object {"type": ..., ...}. Throws ConfigError.
LengthSpec parse_length(const config::JsonReader& parent, const std::string& key,
                        const LengthSpec& def);

class LengthSampler {
 public:
  explicit LengthSampler(const LengthSpec& spec);

  // `index` is the ordinal of the request being made (0, 1, ...): a sequence takes its
  // value from it; the other kinds ignore it.
  template <typename G>
  int draw(G& g, std::uint64_t index = 0) const {
    double x = 0;
    switch (spec_.kind) {
      case LengthSpec::Kind::kFixed:
        x = spec_.value;
        break;
      case LengthSpec::Kind::kUniform:
        return static_cast<int>(uniform_int(g, spec_.min, spec_.max));
      case LengthSpec::Kind::kLognormal:
        x = lognormal(g, spec_.mu, spec_.sigma);
        break;
      case LengthSpec::Kind::kNormal:
        x = spec_.mean + spec_.stddev * standard_normal(g);
        break;
      case LengthSpec::Kind::kEmpirical:
        x = spec_.values[spec_.values.size() == 1 ? 0 : weighted_choice(g, cdf_)];
        break;
      case LengthSpec::Kind::kSequence:
        x = spec_.values[index % spec_.values.size()];
        break;
    }
    return clamp(x);
  }
  // The mean of the unclamped distribution (for docs, tests and capacity estimates).
  double mean() const;

 private:
  int clamp(double x) const {
    if (!(x == x)) return spec_.min;  // NaN cannot happen with valid specs; stay safe
    double r = std::round(x);
    r = std::clamp(r, static_cast<double>(spec_.min), static_cast<double>(spec_.max));
    return static_cast<int>(r);
  }
  LengthSpec spec_;
  std::vector<double> cdf_;
};

}  // namespace prima::workload
