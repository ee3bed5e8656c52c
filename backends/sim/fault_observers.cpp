// FaultInjector, part 2: transfer-level faults (registration failures, unresponsive peers,
// corrupted shards), the per-second timeline and the link byte counters.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "backends/sim/fault_injector.h"
#include "backends/sim/fault_injector_impl.h"
#include "backends/sim/thermal_model.h"

namespace sg4 = simgrid::s4u;

namespace prima::sim {

using faults::FaultType;

std::string seconds_text(double s) {
  return fmt::format("{:g} s", s);
}

namespace {
int node_of(const sg4::Host* h) {
  auto* info = h != nullptr ? h->get_data<HostInfo>() : nullptr;
  return info != nullptr ? info->node : -1;
}
bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
}  // namespace

// Draws in a fixed order: one uniform draw per attempt, faults in timeline order, so the
// same sequence of transfers gives the same outcomes.
TransferFaults FaultInjector::transfer_attempts(const sg4::Host* src, const sg4::Host* dst,
                                                int messages) {
  TransferFaults out;
  const int a = node_of(src), b = node_of(dst);
  if (a == b) return out;  // inside one node: no registration with the NIC
  // Thermal drift: a message whose last packet is lost waits for the reliable connection's
  // ACK timeout before it is resent (losses inside a message are NAKed and resent at once;
  // that cost is in the NIC's bandwidth factor). Probability r per message per drifting NIC.
  for (int node : {a, b}) {
    const faults::FaultSpec* f = node < 0 ? nullptr : active_thermal(node);
    if (f == nullptr) continue;
    const faults::ThermalSpec& spec = f->thermal;
    const double r =
        thermal_state(spec, ambient_at(spec, impl_->runtime->now() - f->start_s)).retransmit_rate;
    if (r <= 0) continue;
    const double stall = spec.ack_timeout_s >= 0 ? spec.ack_timeout_s : env_.ib_ack_timeout_s();
    const int n = std::clamp(messages, 1, 4096);
    for (int m = 0; m < n; ++m)
      if (impl_->uniform() < r) out.extra_s += stall;
  }
  for (size_t i = 0; i < faults_.size() && !out.fails; ++i) {
    const faults::FaultSpec& f = faults_[i];
    const Impl::FaultEl& e = impl_->els[i];
    if (f.type != FaultType::kRdmaRegistration || !e.active) continue;
    const int node = a >= 0 && contains(e.nodes, a) ? a : b >= 0 && contains(e.nodes, b) ? b : -1;
    if (node < 0) continue;
    if (!env_.ucx_memtype_cache) {  // registration on every transfer: slower, never fails
      out.extra_s += f.registration_cost_s;
      continue;
    }
    int failures = 0;
    while (true) {
      if (!(impl_->uniform() < f.failure_rate)) break;
      ++failures;
      out.extra_s += f.retry_s;
      if (failures >= f.max_retries) {
        out.fails = true;
        out.code = StatusCode::kUnavailable;
        out.reason = fmt::format(
            "{} -> {}: RDMA memory registration failed {} time(s) on node {} "
            "(rdma_registration_failure fault '{}'); with UCX_MEMTYPE_CACHE=n registration is "
            "redone per transfer and cannot fail this way",
            src->get_name(), dst->get_name(), failures, node, f.label(static_cast<int>(i)));
        break;
      }
    }
  }
  return out;
}

TransferFaults FaultInjector::collective_stall(const std::vector<DeviceId>& gpus) const {
  TransferFaults out;
  int worst = -1;
  for (size_t i = 0; i < faults_.size(); ++i) {
    const faults::FaultSpec& f = faults_[i];
    if (f.type != FaultType::kUnresponsivePeer || !impl_->els[i].active) continue;
    if (std::find(gpus.begin(), gpus.end(), f.target.index) == gpus.end()) continue;
    if (worst < 0 || f.stall_s > faults_[worst].stall_s) worst = static_cast<int>(i);
  }
  if (worst < 0) return out;
  const faults::FaultSpec& f = faults_[worst];
  if (f.stall_s > env_.collective_timeout_s) {
    out.extra_s = env_.collective_timeout_s;
    out.fails = true;
    out.code = StatusCode::kDeadlineExceeded;
    out.reason = fmt::format(
        "collective timed out after {} waiting for gpu {} (unresponsive peer; NCCL_TIMEOUT={:g}; "
        "fault '{}')",
        seconds_text(env_.collective_timeout_s), f.target.index, env_.collective_timeout_s,
        f.label(worst));
  } else {
    out.extra_s = f.stall_s;
  }
  return out;
}

double FaultInjector::unresponsive_stall_s(const std::vector<DeviceId>& gpus) const {
  double stall = 0;
  for (size_t i = 0; i < faults_.size(); ++i) {
    const faults::FaultSpec& f = faults_[i];
    if (f.type == FaultType::kUnresponsivePeer && impl_->els[i].active &&
        std::find(gpus.begin(), gpus.end(), f.target.index) != gpus.end())
      stall = std::max(stall, f.stall_s);
  }
  return stall;
}

bool FaultInjector::corrupted_shard(DeviceId d) const {
  for (size_t i = 0; i < faults_.size(); ++i)
    if (faults_[i].type == FaultType::kCorruptedShard && impl_->els[i].active &&
        faults_[i].target.index == d)
      return true;
  return false;
}

std::string FaultInjector::faults_downing_gpu(DeviceId d) const {
  std::string out;
  const int h =
      d >= 0 && d < static_cast<int>(impl_->host_index.size()) ? impl_->host_index[d] : -1;
  if (h < 0) return out;
  for (size_t i = 0; i < faults_.size(); ++i) {
    const auto& e = impl_->els[i];
    if (!e.active ||
        !(faults_[i].type == FaultType::kNodeFailure || faults_[i].type == FaultType::kGpuFailure))
      continue;
    if (contains(e.hosts, h))
      out += (out.empty() ? "" : ";") + faults_[i].label(static_cast<int>(i));
  }
  return out;
}

std::string FaultInjector::faults_downing_link(const sg4::Link* l) const {
  std::string out;
  auto it = impl_->link_index.find(l);
  if (it == impl_->link_index.end()) return out;
  for (size_t i = 0; i < faults_.size(); ++i) {
    const auto& e = impl_->els[i];
    if (!e.active ||
        !(faults_[i].type == FaultType::kNodeFailure || faults_[i].type == FaultType::kLinkDown))
      continue;
    if (contains(e.links, it->second))
      out += (out.empty() ? "" : ";") + faults_[i].label(static_cast<int>(i));
  }
  return out;
}

bool FaultInjector::measuring() const {
  return !impl_->meters.empty();
}

void FaultInjector::count_link_bytes(const sg4::Link* half, double bytes) {
  auto it = impl_->meter_of.find(half);
  if (it == impl_->meter_of.end()) return;
  impl_->meters[it->second.first].bytes[it->second.second] += bytes;
}

void FaultInjector::count_bytes(const std::vector<sg4::Link*>& route, double bytes) {
  if (impl_->meter_of.empty() || bytes <= 0) return;
  for (const sg4::Link* l : route) count_link_bytes(l, bytes);
}

const faults::FaultSpec* FaultInjector::active_thermal(int node) const {
  for (size_t i = 0; i < faults_.size(); ++i)
    if (faults_[i].type == FaultType::kThermal && impl_->els[i].active &&
        contains(impl_->els[i].nodes, node))
      return &faults_[i];
  return nullptr;
}

ThermalState FaultInjector::node_thermal(int node, double t) const {
  if (const faults::FaultSpec* f = active_thermal(node))
    return thermal_state(f->thermal, ambient_at(f->thermal, t - f->start_s));
  const faults::FaultSpec* spec = nullptr;  // nominal of the first one covering it
  for (size_t i = 0; i < faults_.size() && spec == nullptr; ++i)
    if (faults_[i].type == FaultType::kThermal && contains(impl_->els[i].nodes, node))
      spec = &faults_[i];
  const faults::ThermalSpec nominal = spec != nullptr ? spec->thermal : faults::ThermalSpec{};
  return thermal_state(nominal, nominal.nominal_c);
}

double FaultInjector::retransmit_rate(int node) const {
  return node_thermal(node, impl_->runtime->now()).retransmit_rate;
}

double FaultInjector::gpu_temperature_c(DeviceId d) const {
  return node_thermal(impl_->platform->topology().node_of(d), impl_->runtime->now()).gpu_c;
}

std::vector<std::string> FaultInjector::timeline_columns() const {
  return impl_->columns;
}

std::vector<std::string> FaultInjector::sample_timeline(double t, double window_s) {
  Impl& m = *impl_;
  std::vector<std::string> out;
  out.reserve(m.columns.size());
  for (int n : m.thermal_nodes) out.push_back(fmt::format("{:.2f}", node_thermal(n, t).ambient_c));
  if (m.has_thermal) {
    double hottest = -1e9, r_sum = 0;
    int drifting = 0;
    for (int n = 0; n < m.platform->topology().nodes; ++n) {
      const ThermalState s = node_thermal(n, t);
      hottest = std::max(hottest, s.gpu_c);
      if (s.drift_ppm > 0) {
        r_sum += s.retransmit_rate;
        ++drifting;
      }
    }
    out.push_back(fmt::format("{:.2f}", hottest));
    out.push_back(fmt::format("{:.5f}", drifting > 0 ? r_sum / drifting : 0.0));
  }
  for (Impl::Meter& mt : m.meters) {
    double util = 0;
    for (size_t h = 0; h < mt.halves.size(); ++h) {
      if (window_s > 0 && mt.nominal_Bps[h] > 0)
        util = std::max(util, mt.bytes[h] / (window_s * mt.nominal_Bps[h]));
      mt.bytes[h] = 0;
    }
    out.push_back(fmt::format("{:.4f}", std::min(1.0, util)));
  }
  std::string active;
  for (size_t i = 0; i < faults_.size(); ++i)
    if (faults_[i].active_at(t))
      active += (active.empty() ? "" : ";") + faults_[i].label(static_cast<int>(i));
  out.push_back(active);
  return out;
}

}  // namespace prima::sim
