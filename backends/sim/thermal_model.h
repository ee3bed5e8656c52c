// Thermal model of the sim backend's "thermal" fault: from an ambient temperature to NIC
// clock drift, packet retransmissions and their cost on a NIC link, and GPU throttling.
// Equations and defaults: docs/faults.md, "How the sim backend models each fault".
//
// Pure functions of a ThermalSpec and a temperature; no state. Thread-safe.
#pragma once

#include "engine/faults/fault_spec.h"

namespace prima::sim {

// Go-back-N window of the NIC's reliable transport: a retransmission resends this many
// packets (the lost one and those sent after it), so a loss costs W packets of bandwidth.
inline constexpr double kGoBackNWindow = 8;
// Lowest GPU speed the thermal model throttles to (fraction of peak).
inline constexpr double kMinThermalSpeed = 0.3;

struct ThermalState {
  double ambient_c = 0;
  double drift_ppm = 0;             // |T - nominal| x drift_ppm_per_c
  double retransmit_rate = 0;       // r, per packet
  double nic_bandwidth_factor = 1;  // (1 - r) / (1 + r W)
  double nic_extra_latency_s = 0;   // r x retransmit_timeout_s, per message
  double gpu_c = 0;                 // ambient + gpu_load_rise_c
  double gpu_speed_factor = 1;      // max(0.3, 1 - throttle_per_c x (T_gpu - throttle_c)) when hot
};

// Ambient temperature `offset_s` after the fault's start: piecewise linear through the
// profile's points, flat before the first and after the last.
double ambient_at(const faults::ThermalSpec& spec, double offset_s);

// The model's outputs at ambient temperature `ambient_c`.
ThermalState thermal_state(const faults::ThermalSpec& spec, double ambient_c);

}  // namespace prima::sim
