#include "engine/scenario/scenario.h"

#include <filesystem>

#include "engine/cluster/cluster_options.h"
#include "engine/config/embedded.h"
#include "engine/config/json_parse.h"
#include "engine/perf/engine_profile.h"
#include "engine/sched/scheduler_options.h"

namespace prima::scenario {
namespace fs = std::filesystem;
using config::Json;
using config::JsonReader;

Status apply_set(Json* j, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    return invalid_argument("--set " + assignment + ": expected PATH=VALUE, e.g. seed=7 or " +
                            "deployment.parallel_strategy.tensor_parallel=8");
  const std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  Json value = text;  // a bare word is a string
  if (auto parsed = config::parse_json(text, nullptr)) value = std::move(*parsed);
  Json* cur = j;
  std::size_t start = 0;
  while (true) {
    auto dot = path.find('.', start);
    std::string key =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) return invalid_argument("--set " + assignment + ": empty path component");
    if (!cur->is_object()) {
      return invalid_argument("--set " + assignment + ": \"" + path.substr(0, start - 1) +
                              "\" is not an object");
    }
    if (dot == std::string::npos) {
      (*cur)[key] = value;
      return ok_status();
    }
    if (!cur->contains(key) || (*cur)[key].is_null()) (*cur)[key] = Json::object();
    cur = &(*cur)[key];
    start = dot + 1;
  }
}

static void parse_scheduler(const JsonReader& r, Scenario* s) {
  s->max_model_len = static_cast<int>(r.non_negative_integer("max_model_len", 0));
  sched::parse_scheduler_options(r, &s->scheduler);  // reads the rest, then finish()
}

static void parse_slo(const JsonReader& r, SloSpec* slo) {
  slo->ttft_s = r.duration_s("ttft", 0);
  slo->tpot_s = r.duration_s("tpot", 0);
  slo->e2e_s = r.duration_s("e2e", 0);
  // The share of requests that must meet the bounds for the run to meet its SLO (report.json
  // slo.target, the verdict).
  if (r.optional_number("attainment")) {
    slo->attainment = r.fraction("attainment", 1);
    if (!(slo->attainment > 0)) r.fail("attainment", "expected a share in (0, 1], e.g. 0.99");
  }
  r.finish();
}

// The two axes of the cost model's parameters: the hardware ("calibration": a profile or
// table, "roofline", or the GPU's built-in profile) and the serving engine ("engine": a name,
// a file or an object; default kDefaultEngine, kRooflineEngine under "roofline"). The
// engine's scheduler defaults and KV sizing are what "scheduler" and "deployment" start from.
static void parse_calibration_and_engine(const JsonReader& r, const std::string& file,
                                         const std::string& base_dir, Scenario* s) {
  if (r.has("calibration")) {
    const Json& c = r.value("calibration");
    if (c.is_string() && c.get<std::string>() == "roofline") {
      s->calibration.roofline_only = true;
    } else if (c.is_string()) {
      std::string p = c.get<std::string>();
      if (!fs::path(p).is_absolute()) p = (fs::path(base_dir) / p).string();
      auto cal = perf::load_calibration_file(p);
      if (!cal.ok()) r.fail("calibration", cal.status().message());
      s->calibration = *cal;
    } else {
      s->calibration = perf::parse_calibration(r.object("calibration"));
      s->calibration.source = file + ": calibration";
    }
  }
  if (r.has("engine")) {
    s->calibration.engine =
        std::make_shared<const perf::EngineProfile>(perf::resolve_engine(r, "engine", base_dir));
  } else {
    const perf::EngineProfile* e = perf::builtin_engine(
        s->calibration.roofline_only ? perf::kRooflineEngine : perf::kDefaultEngine);
    if (!e) r.fail("engine", "the built-in engine profiles are missing (a build defect)");
    s->calibration.engine = std::shared_ptr<const perf::EngineProfile>(e, [](auto*) {});
  }
  const perf::EngineProfile& eng = *s->calibration.engine;
  const perf::EngineScheduler& defaults = eng.scheduler_for(s->topology.gpu.name);
  s->scheduler.max_num_seqs = defaults.max_num_seqs;
  s->scheduler.max_num_batched_tokens = defaults.max_num_batched_tokens;
  s->scheduler.chunked_prefill = defaults.chunked_prefill;
  s->scheduler.mixed_batches = defaults.mixed_batches;
  s->scheduler.overlap_schedule = defaults.overlap_schedule;
  s->scheduler.enable_prefix_caching = defaults.prefix_caching;
  s->scheduler.capacity_policy = defaults.guaranteed_no_evict
                                     ? sched::CapacityPolicy::kGuaranteedNoEvict
                                     : sched::CapacityPolicy::kMaxUtilization;
  s->memory.gpu_memory_utilization = eng.kv.memory_utilization;
  s->memory.kv_of_free = eng.kv.of_free;
  s->memory.reserved_bytes = eng.kv.reserved_bytes;
}

Result<Scenario> parse_scenario(const Json& j, const std::string& file,
                                const std::string& base_dir) {
  Scenario s;
  s.file = file;
  s.base_dir = base_dir;
  s.resolved = j;
  Status st = config::to_status([&] {
    JsonReader r(j, file);
    s.name = r.string("name", fs::path(file).stem().string());
    r.string("description", "");
    s.seed = static_cast<std::uint64_t>(r.non_negative_integer("seed", 1));
    s.duration_s = r.duration_s("duration", 60);
    if (s.duration_s <= 0) r.fail("duration", "expected a duration > 0");
    s.max_drain_s = r.duration_s("max_drain", 3600);
    s.model = model::parse_model(r, "model");
    std::string q = r.one_of("quantization", model::quantization_names(), "fp16");
    model::parse_quantization(q, &s.quantization);
    s.topology = plan::resolve_topology(r, "topology");
    parse_calibration_and_engine(r, file, base_dir, &s);
    if (auto d = r.optional_object("deployment")) plan::parse_deployment(*d, &s.plan, &s.memory);
    if (auto sc = r.optional_object("scheduler")) parse_scheduler(*sc, &s);
    if (s.plan.micro_batch > 0 && s.plan.pipeline_parallel > 1)
      s.scheduler.max_seqs_per_step = s.plan.micro_batch;
    if (r.has("speculative") && r.value("speculative").is_null()) {
      r.consume("speculative");  // off, as when absent (a plan's search sets it so)
    } else if (auto sp = r.optional_object("speculative")) {
      s.speculative = parse_speculative(*sp, s.model);
      if (s.scheduler.type != sched::SchedulerType::kContinuous)
        r.fail("speculative", "speculative decoding needs the continuous scheduler");
      s.scheduler.speculative_tokens = s.speculative.num_tokens;
      s.scheduler.acceptance_rate = s.speculative.acceptance_rate;
      s.scheduler.acceptance_seed = s.seed;
      // The draft's weights and KV cache share the GPUs (split over TP like the target's).
      const double tp = std::max(1, s.plan.tensor_parallel);
      s.memory.extra_weight_bytes = s.speculative.weight_bytes(s.quantization) / tp;
      s.memory.extra_kv_bytes_per_token =
          s.speculative.draft.kv_bytes_per_token(s.memory.kv_bytes_per_element) / tp;
    }
    if (auto ko = r.optional_object("kv_offload")) {
      s.kv_tiers = parse_kv_offload(*ko);
      if (!s.scheduler.enable_prefix_caching)
        r.fail("kv_offload",
               "KV offload tiers hold prefix-cache blocks: set scheduler.enable_prefix_caching");
    }
    // router, autoscaler, disaggregation, response_cache, warmup (each optional).
    s.cluster.router.seed = s.seed;
    cluster::parse_cluster_options(r, &s.cluster);
    s.routing = s.cluster.router.policy;
    s.workload = workload::parse_workload(r.object("workload"), base_dir);
    if (auto slo = r.optional_object("slo")) parse_slo(*slo, &s.slo);
    s.faults = faults::parse_faults(r, s.topology, s.duration_s, s.duration_s + s.max_drain_s);
    s.env = faults::parse_env(r);
    if (r.has("sim")) {
      if (!r.value("sim").is_object()) r.fail("sim", "expected an object");
      s.sim = r.value("sim");
    } else {
      r.consume("sim");
      s.sim = Json::object();
    }
    if (s.max_model_len == 0) s.max_model_len = s.model.max_context;
    if (s.max_model_len > s.model.max_context)
      r.fail("scheduler", "max_model_len " + std::to_string(s.max_model_len) +
                              " exceeds the model's context of " +
                              std::to_string(s.model.max_context));
    r.finish();
  });
  if (!st.ok()) return st;
  Status v = s.scheduler.validate();
  if (!v.ok()) return invalid_argument(file + ": /scheduler: " + v.message());
  return s;
}

perf::RunFacts run_facts(const Scenario& sc) {
  perf::RunFacts f;
  f.params_b = sc.model.total_params() / 1e9;
  f.tensor_parallel = sc.plan.tensor_parallel;
  f.max_batch = sc.scheduler.max_num_seqs;
  auto longest = [](const workload::LengthSpec& l) {
    return l.kind == workload::LengthSpec::Kind::kFixed ? l.value : static_cast<double>(l.max);
  };
  if (sc.workload.arrival.type != workload::ArrivalType::kTrace)
    f.max_context = static_cast<int>(std::min<double>(
        sc.max_model_len, longest(sc.workload.prompt_tokens) + longest(sc.workload.output_tokens)));
  return f;
}

Result<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& sets) {
  Json j;
  std::string file, base_dir = ".";
  std::string embedded_name = path.empty() ? "default" : path;
  if (!path.empty() && fs::exists(path)) {
    PRIMA_ASSIGN_OR_RETURN(j, config::read_json_file(path));
    file = path;
    base_dir = fs::path(path).parent_path().string();
    if (base_dir.empty()) base_dir = ".";
  } else {
    auto text = config::embedded_file("scenarios/" + embedded_name + ".json");
    if (!text) {
      return not_found(path + ": no such file, and no built-in scenario of that name " +
                       "(built in: default)");
    }
    file = "<embedded>/scenarios/" + embedded_name + ".json";
    PRIMA_ASSIGN_OR_RETURN(j, config::parse_json_text(std::string(*text), file));
  }
  for (const auto& a : sets) PRIMA_RETURN_IF_ERROR(apply_set(&j, a));
  return parse_scenario(j, file, base_dir);
}

}  // namespace prima::scenario
