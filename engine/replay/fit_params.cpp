// Fit parameters by name (fit_params.h).
#include "engine/replay/fit_params.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace prima::replay {

namespace {
constexpr double kZeroSeconds = 1e-9;
}  // namespace

std::string fit_param_names() {
  std::string s;
  for (const auto& f : perf::efficiency_fields()) {
    if (!s.empty()) s += ", ";
    s += f.name;
  }
  return s;
}

Result<FitParams> parse_fit_params(const std::string& list) {
  FitParams out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = list.find(',', start);
    std::string name = list.substr(start, comma == std::string::npos ? comma : comma - start);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    const perf::EfficiencyField* f = perf::find_efficiency_field(name);
    if (!f)
      return invalid_argument("--fit-params: unknown parameter \"" + name +
                              "\" (one of: " + fit_param_names() + ")");
    if (std::find(out.begin(), out.end(), f) != out.end())
      return invalid_argument("--fit-params: \"" + name + "\" is named twice");
    out.push_back(f);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

perf::FitBound fit_bound(const perf::EfficiencyField& f) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  switch (f.kind) {
    case perf::EfficiencyField::kShare:
      return {0.01, 1};
    case perf::EfficiencyField::kOptionalShare:
      return {0, 1};
    case perf::EfficiencyField::kSeconds:
    case perf::EfficiencyField::kCount:
      return {0, kInf};
  }
  return {};
}

double fit_initial_step(const perf::EfficiencyField& f, double value) {
  switch (f.kind) {
    case perf::EfficiencyField::kShare:
    case perf::EfficiencyField::kOptionalShare:
      return 0.1;
    case perf::EfficiencyField::kSeconds:
      // Under a nanosecond is a fit's zero (prima profile writes e.g. 5e-15 s for a host term
      // its forward steps cannot see): half of it would be a step that never moves.
      return value >= kZeroSeconds ? 0.5 * value : 1e-4;
    case perf::EfficiencyField::kCount:
      return value > 0 ? 0.5 * value : 1;
  }
  return 0.1;
}

std::vector<double> get_params(const perf::Efficiency& e, const FitParams& p) {
  std::vector<double> x;
  for (const auto* f : p) x.push_back(e.*(f->member));
  return x;
}

void set_params(perf::Efficiency* e, const FitParams& p, const std::vector<double>& x) {
  for (std::size_t i = 0; i < p.size() && i < x.size(); ++i) (*e).*(p[i]->member) = x[i];
}

}  // namespace prima::replay
