// FaultInjector: plays a scenario's fault timeline (faults::FaultSpec) on the SimGrid
// platform, and measures what the timeline needs per simulated second.
//
// At each fault's start and end (and every ThermalSpec::update_s while a thermal fault is
// active) it recomputes the state of every element it touches from all active faults and
// applies it: link bandwidth (Link::set_bandwidth on both halves of split-duplex links: base
// x degradation x thermal retransmission factor x (1 - nvlink share)), link latency factors
// (consulted by the platform's CM02 latency-factor callback), link and host state
// (turn_off / turn_on: node failure = its GPU hosts and its NIC), GPU speed (pstate nearest
// to straggler x thermal throttle, or a speed profile), storage bandwidth. Effects compose as
// described in fault_spec.h. Everything it changes goes back to nominal when the last fault
// on it ends.
//
// Besides the platform, SimExecutor and SimFabric ask it about transfer-level faults:
//  - transfer_attempts(): a transfer from/to a node under rdma_registration_failure fails
//    with failure_rate per attempt (a seeded generator, so runs are deterministic); each
//    failure costs retry_s; after max_retries failures the transfer fails. With
//    CommEnv::ucx_memtype_cache off, no failures, but registration_cost_s per transfer.
//  - collective_stall_s(): an unresponsive_peer GPU delays every collective (TP all-reduce,
//    PP send, health probe) of its stage by stall_s; when stall_s > collective_timeout_s
//    the step fails after collective_timeout_s with a deadline-exceeded status naming the
//    GPU and NCCL_TIMEOUT (seed 001).
//  - corrupted_shard(d): the weight load of GPU d fails its checksum (seed 004).
//
// The executors and the fabric also report the bytes of their flows (count_bytes) so the
// timeline can show link utilization. Wiring (backends/sim/simulation.cpp): construct it
// after the platform and runtime, start() before the run, set_fault_injector(&inj) on every
// SimExecutor and the SimFabric, timeline_columns() once and sample_timeline(t, 1.0) every
// simulated second, stop() at the end. Models and equations: docs/faults.md.
//
// Thread-safety: simulation loop only. Ownership: borrows the platform and runtime, which
// must outlive it; owns its timers (stop() cancels them so the simulation can end).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/sim/platform.h"
#include "engine/faults/fault_spec.h"
#include "engine/runtime.h"

namespace prima::sim {

struct ThermalState;

// What a transfer-level fault does to one transfer (or one collective).
struct TransferFaults {
  double extra_s = 0;  // time added (retries, registration cost, stall up to the timeout)
  bool fails = false;  // the transfer / collective fails after extra_s
  std::string reason;  // why it fails (names the node or GPU, the fault and the env knob)
  // How it fails: kUnavailable (registration), kDeadlineExceeded (collective timeout).
  StatusCode code = StatusCode::kUnavailable;
  Status status() const { return fails ? Status(code, reason) : ok_status(); }
};

class FaultInjector {
 public:
  FaultInjector(SimPlatform* platform, Runtime* runtime, std::vector<faults::FaultSpec> faults,
                faults::CommEnv env, std::uint64_t seed);
  ~FaultInjector();
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  // Arms the timers of every fault window (call once, before the run).
  void start();
  // Cancels pending timers (the run is over); the platform is left as it is. A thermal fault
  // re-evaluates every update_s until its end: with end_s = kForever its timer keeps
  // Engine::run() going until stop() (call it from a timer at the run's end).
  void stop();

  const std::vector<faults::FaultSpec>& faults() const { return faults_; }
  const faults::CommEnv& env() const { return env_; }

  // Transfer-level faults (see above) for a transfer between two GPUs (or GPU and storage).
  // `messages`: how many messages the transfer stands for (e.g. a step's all-reduces), each
  // exposed to a thermal tail-loss stall (ThermalSpec::ack_timeout_s with probability r).
  TransferFaults transfer_attempts(const simgrid::s4u::Host* src, const simgrid::s4u::Host* dst,
                                   int messages = 1);
  // Stall of a collective among `gpus` (the stage's TP group, or a send's two ends).
  TransferFaults collective_stall(const std::vector<DeviceId>& gpus) const;
  bool corrupted_shard(DeviceId d) const;
  // Longest stall_s of the active unresponsive peers among `gpus` (0 when none).
  double unresponsive_stall_s(const std::vector<DeviceId>& gpus) const;
  // Labels of the active faults that turned GPU d / link l off ("" when none), for messages.
  std::string faults_downing_gpu(DeviceId d) const;
  std::string faults_downing_link(const simgrid::s4u::Link* l) const;

  // Bytes that crossed the links of `route` (a flow that completed, or an analytic transfer).
  // Only measured links (the util_ columns) count; cheap when nothing is measured.
  void count_bytes(const std::vector<simgrid::s4u::Link*>& route, double bytes);
  // Bytes over one direction of a split-duplex link (up = GPU/node towards the fabric).
  void count_link_bytes(const simgrid::s4u::Link* half, double bytes);
  bool measuring() const;

  SimPlatform* platform() const;

  // Per-second timeline columns (names fixed at construction; values in the same order):
  //   temp_c_node<i>         ambient of each node a thermal fault covers
  //   gpu_temp_c_max         hottest GPU (when a thermal fault exists)
  //   retransmit_rate        mean packet retransmission rate over NICs with drift, 0..1
  //   util_<link>            mean utilization of the link over the second (both directions,
  //                          max of the two): every node NIC when nodes <= 16, and every link
  //                          a fault targets
  //   active_faults          labels of the faults active at the end of the second, ';'-joined
  std::vector<std::string> timeline_columns() const;
  // Values for the window (t - window_s, t], formatted for CSV; resets link byte counters.
  std::vector<std::string> sample_timeline(double t, double window_s);

  // Observers for the report: retransmission rate and GPU temperature now.
  double retransmit_rate(int node) const;
  double gpu_temperature_c(DeviceId d) const;

 private:
  struct Impl;
  void on_start(int i);
  void on_end(int i);
  void on_tick(int i);
  void recompute();
  // Thermal model of a node at time t: the active thermal fault covering it, or nominal.
  ThermalState node_thermal(int node, double t) const;
  // The active thermal fault covering a node (overlaps are load-time errors), or null.
  const faults::FaultSpec* active_thermal(int node) const;
  std::unique_ptr<Impl> impl_;
  std::vector<faults::FaultSpec> faults_;
  faults::CommEnv env_;
};

}  // namespace prima::sim
