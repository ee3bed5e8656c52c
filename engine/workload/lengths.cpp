#include "engine/workload/lengths.h"

#include <cmath>
#include <limits>

namespace prima::workload {
namespace {

constexpr double kMaxTokens = 1 << 30;

int as_tokens(const config::JsonReader& r, const std::string& key, double v) {
  if (!(v >= 0) || v > kMaxTokens || std::floor(v) != v)
    r.fail(key, "expected a token count (an integer in [0, 2^30]), got " +
                    config::describe(r.json()[key]));
  return static_cast<int>(v);
}

}  // namespace

std::vector<double> cumulative(const std::vector<double>& weights) {
  std::vector<double> cdf(weights.size());
  double total = 0;
  for (double w : weights) total += w;
  double acc = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    acc += weights[i];
    cdf[i] = acc / total;
  }
  if (!cdf.empty()) cdf.back() = 1.0;
  return cdf;
}

LengthSpec LengthSpec::fixed(int v) {
  LengthSpec s;
  s.kind = Kind::kFixed;
  s.value = v;
  return s;
}

Status LengthSpec::validate(const std::string& what) const {
  auto bad = [&](const std::string& m) { return invalid_argument(what + ": " + m); };
  if (min < 0) return bad("min must be >= 0");
  if (max < min) return bad("max must be >= min");
  switch (kind) {
    case Kind::kFixed:
      if (!(value >= 0)) return bad("value must be >= 0");
      break;
    case Kind::kUniform:
      break;
    case Kind::kLognormal:
      if (!std::isfinite(mu) || !(sigma >= 0) || !std::isfinite(sigma))
        return bad("lognormal needs a finite mu and sigma >= 0");
      break;
    case Kind::kNormal:
      if (!std::isfinite(mean) || !(stddev >= 0) || !std::isfinite(stddev))
        return bad("normal needs a finite mean and stddev >= 0");
      break;
    case Kind::kEmpirical: {
      if (values.empty()) return bad("empirical needs at least one value");
      if (!weights.empty() && weights.size() != values.size())
        return bad("empirical weights must have one entry per value");
      double total = 0;
      for (double w : weights) {
        if (!(w >= 0) || !std::isfinite(w)) return bad("empirical weights must be >= 0");
        total += w;
      }
      if (!weights.empty() && !(total > 0)) return bad("empirical weights must not all be 0");
      break;
    }
    case Kind::kSequence:
      if (values.empty()) return bad("sequence needs at least one value");
      break;
  }
  return ok_status();
}

LengthSampler::LengthSampler(const LengthSpec& spec) : spec_(spec) {
  if (spec_.kind == LengthSpec::Kind::kEmpirical) {
    std::vector<double> w = spec_.weights;
    if (w.empty()) w.assign(spec_.values.size(), 1.0);
    cdf_ = cumulative(w);
  }
}

double LengthSampler::mean() const {
  switch (spec_.kind) {
    case LengthSpec::Kind::kFixed:
      return spec_.value;
    case LengthSpec::Kind::kUniform:
      return 0.5 * (spec_.min + static_cast<double>(spec_.max));
    case LengthSpec::Kind::kLognormal:
      return std::exp(spec_.mu + 0.5 * spec_.sigma * spec_.sigma);
    case LengthSpec::Kind::kNormal:
      return spec_.mean;
    case LengthSpec::Kind::kEmpirical: {
      double m = 0, prev = 0;
      for (std::size_t i = 0; i < spec_.values.size(); ++i) {
        m += spec_.values[i] * (cdf_[i] - prev);
        prev = cdf_[i];
      }
      return m;
    }
    case LengthSpec::Kind::kSequence: {
      double m = 0;
      for (int v : spec_.values) m += v;
      return m / static_cast<double>(spec_.values.size());
    }
  }
  return 0;
}

LengthSpec parse_length(const config::JsonReader& parent, const std::string& key,
                        const LengthSpec& def) {
  if (!parent.has(key)) {
    parent.consume(key);
    return def;
  }
  const config::Json& v = parent.value(key);
  if (v.is_number()) {
    LengthSpec s = LengthSpec::fixed(as_tokens(parent, key, v.get<double>()));
    s.min = 0;  // a fixed number is taken as written
    return s;
  }
  if (!v.is_object())
    parent.fail(key,
                "expected a token count or an object {\"type\": \"fixed\" | \"uniform\" | "
                "\"lognormal\" | \"normal\" | \"empirical\" | \"sequence\", ...}, got " +
                    config::describe(v));
  config::JsonReader r = parent.object(key);
  LengthSpec s;
  std::string type =
      r.one_of("type", {"fixed", "uniform", "lognormal", "normal", "empirical", "sequence"});
  auto tokens = [&](const std::string& k) { return as_tokens(r, k, r.number(k)); };
  // Clamps; uniform requires both, as its range.
  if (type == "uniform") {
    s.kind = LengthSpec::Kind::kUniform;
    s.min = tokens("min");
    s.max = tokens("max");
  } else {
    s.min = r.has("min") ? tokens("min") : (r.consume("min"), 1);
    s.max = r.has("max") ? tokens("max") : (r.consume("max"), std::numeric_limits<int>::max());
  }
  if (s.max < s.min) r.fail("max", "expected max >= min (" + std::to_string(s.min) + ")");
  if (type == "fixed") {
    s.kind = LengthSpec::Kind::kFixed;
    s.value = tokens("value");
  } else if (type == "lognormal") {
    s.kind = LengthSpec::Kind::kLognormal;
    if (!r.has("sigma")) r.fail("sigma", "missing required field (expected a number >= 0)");
    s.sigma = r.non_negative_number("sigma", 0);
    bool has_mean = r.has("mean"), has_median = r.has("median");
    if (has_mean == has_median)
      r.fail_here("lognormal needs exactly one of \"mean\" or \"median\" (and \"sigma\")");
    if (has_mean)
      s.mu = std::log(r.positive_number("mean")) - 0.5 * s.sigma * s.sigma;
    else
      s.mu = std::log(r.positive_number("median"));
    r.consume("mean");
    r.consume("median");
  } else if (type == "normal") {
    s.kind = LengthSpec::Kind::kNormal;
    s.mean = r.number("mean");
    s.stddev = r.non_negative_number("stddev", 0);
    if (!r.has("stddev")) r.fail("stddev", "missing required field (expected a number >= 0)");
  } else if (type == "empirical" || type == "sequence") {
    s.kind = type == "empirical" ? LengthSpec::Kind::kEmpirical : LengthSpec::Kind::kSequence;
    std::vector<double> vals = r.numbers("values");
    if (vals.empty()) r.fail("values", "expected a non-empty array of token counts");
    for (std::size_t i = 0; i < vals.size(); ++i) {
      if (!(vals[i] >= 0) || vals[i] > kMaxTokens || std::floor(vals[i]) != vals[i])
        r.fail("values/" + std::to_string(i),
               "expected a token count (an integer in [0, 2^30]), got " +
                   config::describe(r.json()["values"][i]));
      s.values.push_back(static_cast<int>(vals[i]));
    }
    if (type == "sequence") {
      if (r.has("weights"))
        r.fail("weights", "a sequence takes its values in order; weights apply to \"empirical\"");
      r.consume("weights");
    } else if (r.has("weights")) {
      s.weights = r.numbers("weights");
      if (s.weights.size() != s.values.size())
        r.fail("weights", "expected " + std::to_string(s.values.size()) +
                              " weights (one per value), got " + std::to_string(s.weights.size()));
      double total = 0;
      for (std::size_t i = 0; i < s.weights.size(); ++i) {
        if (!(s.weights[i] >= 0)) r.fail("weights/" + std::to_string(i), "expected a weight >= 0");
        total += s.weights[i];
      }
      if (!(total > 0)) r.fail("weights", "expected at least one positive weight");
    } else {
      r.consume("weights");
    }
  }
  r.finish();
  return s;
}

}  // namespace prima::workload
