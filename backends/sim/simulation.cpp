#include "backends/sim/simulation.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <unordered_map>

#include "backends/sim/sim_cluster.h"
#include "backends/sim/simulation_report.h"
#include "engine/workload/workload.h"

namespace prima::sim {
namespace {

using Clock = std::chrono::steady_clock;

// One simulation, step by step: wire the engine's callbacks, sample once a simulated second,
// post the workload's arrivals, run the platform, then account memory and build the report.
class Run {
 public:
  Run(const scenario::Scenario& sc, const SimulationOptions& opts, Clock::time_point wall_start,
      std::unique_ptr<workload::WorkloadDriver> driver, std::unique_ptr<SimCluster> cl)
      : sc_(sc),
        opts_(opts),
        wall_start_(wall_start),
        driver_(std::move(driver)),
        cl_(std::move(cl)),
        rt_(*cl_->rt),
        engine_(*cl_->engine),
        rec_(*cl_->recorder),
        injector_(cl_->injector.get()),
        closed_loop_(sc.workload.arrival.type == workload::ArrivalType::kClosedLoop) {}

  Result<SimulationOutput> run() {
    start_engine();
    start_sampler();
    PRIMA_RETURN_IF_ERROR(start_arrivals());
    cl_->platform->run();
    note_peak_memory();
    return output();
  }

 private:
  double wall_s() const {
    return std::chrono::duration<double>(Clock::now() - wall_start_).count();
  }

  // The engine and the fault injector start; a request that ends hands its spec back to a
  // closed-loop driver and, once the driver is done, may finish the run.
  void start_engine() {
    if (opts_.on_token)
      engine_.on_token = [this](const Sequence& s) { opts_.on_token(s, rt_.now()); };
    engine_.start();
    if (injector_) injector_->start();
    if (injector_) rec_.set_extra_columns(injector_->timeline_columns());
    engine_.on_end = [this](const Sequence& s) {
      if (closed_loop_) {
        auto it = specs_.find(s.req.id);
        if (it != specs_.end()) {
          driver_->on_finished(it->second, rt_.now());
          specs_.erase(it);
        }
      }
      // Nothing to finish before the driver is done: its last arrival (or, closed loop, the
      // on_finished just above) makes it done, and an arrival posts maybe_finish itself.
      if (driver_->done()) rt_.post([this] { maybe_finish(); });
    };
  }

  // The fault injector's timeline columns for the interval since the last sample.
  std::vector<std::string> fault_columns(Time t) {
    std::vector<std::string> v;
    if (injector_) v = injector_->sample_timeline(t, std::max(1e-9, t - last_sample_));
    last_sample_ = t;
    return v;
  }

  // Ends the run once the workload is done and nothing is left in the system: the last sample,
  // and the fault windows past the last request end here.
  void maybe_finish() {
    if (finished_ || !driver_->done() || engine_.in_system() > 0) return;
    finished_ = true;
    rt_.cancel(sampler_);
    engine_.stop();
    auto st = engine_.state();
    rec_.note_replicas_loading(st.replicas_loading);
    const Time t = std::ceil(rt_.now() > 0 ? rt_.now() : 1);
    rec_.sample(t, st.running, st.waiting, st.replicas_up, st.kv_usage, fault_columns(rt_.now()));
    if (injector_) injector_->stop();
  }

  // Once a simulated second: the timeline, the KV means, the drain limit and the progress.
  void start_sampler() {
    sampler_ = rt_.at(1.0, [this] { tick(); });
  }
  void tick() {
    auto st = engine_.state();
    rec_.note_replicas_loading(st.replicas_loading);
    ++samples_;
    kv_usage_sum_ += st.kv_usage;
    double frag = 0;
    for (const auto& r : engine_.replicas())
      frag += r->kv().internal_fragmentation(r->scheduler().tokens_in_kv());
    fragmentation_sum_ += engine_.replicas().empty() ? 0 : frag / engine_.replicas().size();
    rec_.sample(rt_.now(), st.running, st.waiting, st.replicas_up, st.kv_usage,
                fault_columns(rt_.now()));
    const double limit = sc_.duration_s + sc_.max_drain_s;
    if (rt_.now() >= limit && engine_.in_system() > 0) {
      finished_ = true;
      engine_.stop();
      if (injector_) injector_->stop();
      engine_.fail_all(fmt::format("still in the system at the drain limit ({:.0f} s)", limit));
      return;
    }
    if (opts_.progress && wall_s() - last_progress_ >= opts_.progress_every_wall_s) {
      last_progress_ = wall_s();
      opts_.progress(Progress{rt_.now(), sc_.duration_s, last_progress_, rec_.submitted(),
                              rec_.submitted() - engine_.in_system(), engine_.in_system()});
    }
    sampler_ = rt_.at(rt_.now() + 1.0, [this] { tick(); });
  }

  // The workload's arrivals become engine requests on the simulated clock.
  Status start_arrivals() {
    PRIMA_RETURN_IF_ERROR(driver_->start(&rt_, [this](const workload::RequestSpec& spec) {
      Request r = workload::to_request(spec, rt_.now(), next_id_++);
      if (closed_loop_) specs_.emplace(r.id, spec);  // before submit: it may end at once
      engine_.submit(std::move(r));
      rt_.post([this] { maybe_finish(); });
    }));
    rt_.post([this] { maybe_finish(); });
    return ok_status();
  }

  // Memory: weights and activations are fixed; the KV cache counts at its peak use.
  void note_peak_memory() {
    const plan::MemoryFit& fit = cl_->fit;
    double kv_peak = 0;
    for (const auto& r : engine_.replicas())
      kv_peak = std::max(kv_peak, double(r->kv().peak_used_blocks()) / std::max(1, cl_->kv_blocks));
    if (fit.hbm_bytes > 0)
      rec_.note_memory_fraction((fit.weight_bytes + fit.activation_bytes + kv_peak * fit.kv_bytes) /
                                fit.hbm_bytes);
  }

  SimulationOutput output() {
    SimulationOutput out;
    out.fit = cl_->fit;
    out.wall_seconds = wall_s();
    RunTotals t;
    t.simulated_s = rt_.now();
    t.wall_s = out.wall_seconds;
    t.kv_usage_mean = samples_ ? kv_usage_sum_ / samples_ : 0.0;
    t.fragmentation_mean = samples_ ? fragmentation_sum_ / samples_ : 0.0;
    out.report = build_simulation_report(sc_, *cl_, t);
    out.recorder = std::move(cl_->recorder);
    return out;
  }

  const scenario::Scenario& sc_;
  const SimulationOptions& opts_;
  const Clock::time_point wall_start_;
  std::unique_ptr<workload::WorkloadDriver> driver_;
  std::unique_ptr<SimCluster> cl_;
  SimRuntime& rt_;
  cluster::ServingEngine& engine_;
  metrics::Recorder& rec_;
  FaultInjector* injector_;
  const bool closed_loop_;
  // Closed-loop workloads need each request's spec back when it ends.
  std::unordered_map<RequestId, workload::RequestSpec> specs_;
  RequestId next_id_ = 1;
  bool finished_ = false;
  TimerId sampler_ = kNoTimer;
  Time last_sample_ = 0;
  double last_progress_ = 0;
  double kv_usage_sum_ = 0, fragmentation_sum_ = 0;
  int samples_ = 0;
};

}  // namespace

Result<plan::MemoryFit> check_scenario_plan(const scenario::Scenario& sc) {
  auto placed = plan::place(sc.plan, sc.topology);
  if (!placed.ok())
    return invalid_argument(sc.file + ": /deployment: " + placed.status().message());
  auto fit = plan::check_plan(sc.model, sc.quantization, sc.topology, sc.plan, sc.memory,
                              sc.scheduler.max_num_batched_tokens, sc.max_model_len);
  if (!fit.ok()) {
    // Messages that name a path below /deployment start with it.
    const std::string& msg = fit.status().message();
    return invalid_argument(sc.file + ": /deployment" + (msg.rfind('/', 0) == 0 ? "" : ": ") + msg);
  }
  if (!fit->fits) return invalid_argument(sc.file + ": /deployment: " + fit->verdict);
  return fit;
}

Result<SimulationOutput> run_simulation(const scenario::Scenario& sc,
                                        const SimulationOptions& opts) {
  const auto wall_start = Clock::now();
  PRIMA_ASSIGN_OR_RETURN(auto driver, workload::make_workload(sc.workload, sc.seed, sc.duration_s));
  PRIMA_ASSIGN_OR_RETURN(std::unique_ptr<SimCluster> cl, build_sim_cluster(sc));
  return Run(sc, opts, wall_start, std::move(driver), std::move(cl)).run();
}

}  // namespace prima::sim
