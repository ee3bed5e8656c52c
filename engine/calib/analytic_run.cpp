// The in-process analytic run (analytic_run.h).
#include "engine/calib/analytic_run.h"

#include <fmt/format.h>

#include <unordered_map>

#include "engine/cluster/serving_engine.h"
#include "engine/core/virtual_runtime.h"
#include "engine/metrics/recorder.h"
#include "engine/metrics/report.h"
#include "engine/perf/cost_model.h"
#include "engine/workload/workload.h"

namespace prima::calib {
namespace {

// Each step takes the cost model's analytic step time on the node's NVLink.
class AnalyticExecutor : public Executor {
 public:
  AnalyticExecutor(VirtualRuntime* rt, const perf::CostModel* cost, plan::LinkSpec link)
      : rt_(rt), cost_(cost), link_(link) {}
  void launch(const StepBatch& step, std::function<void(const StepResult&)> done) override {
    const perf::StepCost c = cost_->step(step.shape);
    const double dt = cost_->step_time_s(step.shape, link_, link_);
    StepResult r;
    r.start_s = rt_->now();
    r.end_s = r.start_s + dt;
    r.flops = c.total_flops();
    r.stage_busy_s = {dt};
    rt_->at(r.end_s, [r, done = std::move(done)] { done(r); });
  }

 private:
  VirtualRuntime* rt_;
  const perf::CostModel* cost_;
  plan::LinkSpec link_;
};

Status covered(const scenario::Scenario& sc) {
  const auto& p = sc.plan;
  std::string why;
  if (p.replicas != 1) why = fmt::format("{} replicas", p.replicas);
  if (p.pipeline_parallel != 1) why = fmt::format("pipeline parallelism {}", p.pipeline_parallel);
  if (p.gpus_per_replica() > sc.topology.node.gpus)
    why =
        fmt::format("{} GPUs, more than a node's {}", p.gpus_per_replica(), sc.topology.node.gpus);
  if (sc.cluster.disaggregation.enabled()) why = "disaggregation";
  if (sc.cluster.autoscaler.enabled) why = "autoscaling";
  if (!sc.faults.empty()) why = "faults";
  if (why.empty()) return ok_status();
  return invalid_argument(sc.file +
                          ": the analytic run covers one replica on one node with no "
                          "pipeline, disaggregation, autoscaling or faults; this "
                          "scenario has " +
                          why + " (run it with prima simulate)");
}

}  // namespace

Result<nlohmann::ordered_json> run_analytic(const scenario::Scenario& sc) {
  PRIMA_RETURN_IF_ERROR(covered(sc));
  auto fit = plan::check_plan(sc.model, sc.quantization, sc.topology, sc.plan, sc.memory,
                              sc.scheduler.max_num_batched_tokens, sc.max_model_len);
  if (!fit.ok()) return invalid_argument(sc.file + ": /deployment: " + fit.status().message());
  if (!fit->fits) return invalid_argument(sc.file + ": /deployment: " + fit->verdict);
  perf::CostModel cost(sc.model, sc.quantization, sc.topology.gpu, sc.plan,
                       perf::resolve(sc.calibration, sc.topology.gpu.name).efficiency,
                       sc.memory.kv_bytes_per_element);
  cost.set_pcie_bandwidth_Bps(sc.topology.node.pcie.bandwidth_Bps);
  cost.set_tp_link(sc.topology.node.nvlink);
  if (sc.speculative.enabled()) cost.set_draft(sc.speculative.draft, sc.quantization);
  cost.set_expert_load_skew(sc.workload.expert_load_skew);

  VirtualRuntime rt;
  AnalyticExecutor exec(&rt, &cost, sc.topology.node.nvlink);
  cluster::ReplicaSetup setup;
  setup.executor = &exec;
  setup.gpus = sc.plan.gpus_per_replica();
  setup.stage_gpus = sc.plan.gpus_per_stage();
  setup.num_kv_blocks = static_cast<int>(fit->kv_tokens / sc.scheduler.block_size);
  metrics::Recorder rec(setup.gpus);
  cluster::EngineOptions eopts;
  eopts.scheduler = sc.scheduler;
  eopts.scheduler.kv_bytes_per_token = fit->kv_bytes_per_token;
  eopts.routing = sc.routing;
  eopts.max_model_len = sc.max_model_len;
  eopts.cluster = sc.cluster;
  eopts.use_cluster_router = true;
  eopts.kv_bytes_per_token = sc.model.kv_bytes_per_token(sc.memory.kv_bytes_per_element);
  cluster::ServingEngine engine(&rt, eopts, {setup}, &rec);

  PRIMA_ASSIGN_OR_RETURN(auto driver, workload::make_workload(sc.workload, sc.seed, sc.duration_s));
  const bool closed_loop = sc.workload.arrival.type == workload::ArrivalType::kClosedLoop;
  std::unordered_map<RequestId, workload::RequestSpec> specs;
  engine.on_end = [&](const Sequence& s) {
    if (!closed_loop) return;
    auto it = specs.find(s.req.id);
    if (it == specs.end()) return;
    driver->on_finished(it->second, rt.now());
    specs.erase(it);
  };
  engine.start();
  RequestId next_id = 1;
  PRIMA_RETURN_IF_ERROR(driver->start(&rt, [&](const workload::RequestSpec& spec) {
    Request r = workload::to_request(spec, rt.now(), next_id++);
    if (closed_loop) specs.emplace(r.id, spec);
    engine.submit(std::move(r));
  }));
  const double limit = sc.duration_s + sc.max_drain_s;
  while (rt.step()) {
    if (rt.now() >= limit && engine.in_system() > 0) {
      engine.fail_all(fmt::format("still in the system at the drain limit ({:.0f} s)", limit));
      break;
    }
    if (driver->done() && engine.in_system() == 0) break;
  }
  engine.stop();
  metrics::ReportInputs in;
  in.scenario = sc.name;
  in.seed = sc.seed;
  in.simulated_seconds = rt.now();
  in.slo = {sc.slo.ttft_s, sc.slo.tpot_s, sc.slo.e2e_s};
  in.gpus = rec.gpus();
  in.gpu_hbm_bytes = sc.topology.gpu.hbm_bytes;
  return metrics::build_report(rec, in);
}

}  // namespace prima::calib
