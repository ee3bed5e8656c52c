#include "backends/sim/thermal_model.h"

#include <algorithm>
#include <cmath>

namespace prima::sim {

double ambient_at(const faults::ThermalSpec& spec, double offset_s) {
  const auto& p = spec.profile;
  if (p.empty()) return spec.nominal_c;
  if (offset_s <= p.front().first) return p.front().second;
  for (size_t i = 1; i < p.size(); ++i) {
    if (offset_s > p[i].first) continue;
    const auto& [t0, c0] = p[i - 1];
    const auto& [t1, c1] = p[i];
    return c0 + (c1 - c0) * (offset_s - t0) / (t1 - t0);
  }
  return p.back().second;
}

ThermalState thermal_state(const faults::ThermalSpec& spec, double ambient_c) {
  ThermalState s;
  s.ambient_c = ambient_c;
  s.drift_ppm = std::abs(ambient_c - spec.nominal_c) * spec.drift_ppm_per_c;
  s.retransmit_rate =
      std::min(spec.max_retransmit_rate,
               spec.retransmit_per_ppm * std::max(0.0, s.drift_ppm - spec.drift_tolerance_ppm));
  const double r = s.retransmit_rate;
  s.nic_bandwidth_factor = (1 - r) / (1 + r * kGoBackNWindow);
  s.nic_extra_latency_s = r * spec.retransmit_timeout_s;
  s.gpu_c = ambient_c + spec.gpu_load_rise_c;
  if (s.gpu_c > spec.gpu_throttle_c)
    s.gpu_speed_factor =
        std::max(kMinThermalSpeed, 1 - spec.throttle_per_c * (s.gpu_c - spec.gpu_throttle_c));
  return s;
}

}  // namespace prima::sim
