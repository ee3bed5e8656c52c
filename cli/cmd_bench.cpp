// `prima bench --url URL [--endpoint completions|chat|tgi] [--request-rate R | --concurrency N]
// ...`: a load generator in the style of `vllm bench serve` (loadgen/). Arrivals and lengths
// come from the engine's workload code (the same draws as `prima simulate` for the same
// workload and seed; --scenario takes them from a scenario file); requests go over HTTP
// (streaming SSE or not); the result is a table and JSON with report.json's keys (requests,
// latency_s, throughput, slo). See docs/bench.md.
//
// Threads: the main thread runs the arrival loop; worker threads send requests (runner.h).
#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/bench_options.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "engine/scenario/scenario.h"
#include "engine/workload/trace.h"
#include "loadgen/output.h"
#include "loadgen/prompts.h"
#include "loadgen/request_log.h"
#include "loadgen/runner.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

constexpr const char* kExamples = R"(
examples:
  prima bench --url http://127.0.0.1:8000 --num-prompts 200 --request-rate 20
  prima bench --endpoint chat --concurrency 64 --duration 30s --random-input-len 256
  prima bench --endpoint tgi --no-stream --request-rate 5 --arrival gamma --burstiness 0.5
  prima bench --dataset-path prompts.jsonl --num-prompts 100 --request-rate 2 --out r.json
  prima bench --trace azure_conv.csv --time-scale 0.1 --num-prompts 500
  prima bench --scenario scenarios/seed_claims/seed001_llama2_13b_a100_node.json \
              --num-prompts 1000 --json          # the scenario's workload, seed and SLO
  prima bench --slo-ttft 200ms --slo-tpot 50ms   # goodput under an SLO
  prima bench --request-rate 5 --num-prompts 300 --save-requests run.jsonl
  prima replay --measured run.jsonl --scenario S.json   # the simulator against this run
  prima bench --temperature 0 --extra-body '{"seed": 7}'   # sampling fields in every request

Without --request-rate or --concurrency every request is due at once (rate inf, as vllm bench
serve), at most --max-concurrency (default 256) in flight; with a rate, at most 1024 by
default. Exit codes: 0 ok (failed requests are counted, not fatal), 1 the server could not be
reached or no request completed, 2 bad input. See docs/bench.md.
)";

int bad(const std::string& msg) {
  std::fprintf(stderr, "prima bench: %s\n", msg.c_str());
  return kExitBadInput;
}

// What a run sends: the workload with its seed, duration and SLO (from the flags, or from a
// scenario), the prompts of a dataset, and how many requests may be in flight.
struct BenchWorkload {
  workload::WorkloadSpec spec;
  loadgen::ScheduleOptions schedule;
  std::uint64_t seed = 0;
  double duration_s = loadgen::kInf;
  loadgen::SloBounds slo;
  bool send_qos = false;  // send each request's priority and SLA
  std::string scenario_file;
  std::vector<loadgen::DatasetRow> dataset;
  int max_workers = 0;
};

// The scenario's workload, seed and SLO; the flags' --num-prompts, --duration and --seed win.
Status apply_scenario(const BenchOptions& o, BenchWorkload* w) {
  auto sc = scenario::load_scenario(*o.scenario, o.sets);
  if (!sc.ok()) return sc.status();
  w->spec = sc->workload;
  if (w->schedule.num_prompts > 0) w->spec.max_requests = w->schedule.num_prompts;
  if (!o.duration) w->duration_s = sc->duration_s;
  if (!o.seed) w->seed = sc->seed;
  w->slo = {sc->slo.ttft_s, sc->slo.tpot_s, sc->slo.e2e_s};
  for (int c = 0; c < kNumPriorities; ++c)
    w->send_qos = w->send_qos || w->spec.sla_s[c] > 0 || (c != 1 && w->spec.priority_mix[c] > 0);
  w->scenario_file = sc->file;
  return ok_status();
}

// Reads what the workload needs from files (a bad file is exit 2, before the run).
Result<BenchWorkload> bench_workload(const BenchOptions& o) {
  BenchWorkload w;
  w.schedule = o.schedule();
  w.seed = o.seed.value_or(0);
  w.duration_s = w.schedule.duration_s;
  if (o.scenario) {
    if (Status st = apply_scenario(o, &w); !st.ok()) return st;
  } else {
    auto spec = loadgen::workload_from_options(w.schedule);
    if (!spec.ok()) return spec.status();
    w.spec = std::move(*spec);
  }
  w.slo = o.slo(w.slo);
  if (o.dataset_path) {
    auto d = loadgen::read_dataset(*o.dataset_path);
    if (!d.ok()) return d.status();
    w.dataset = std::move(*d);
  }
  const workload::ArrivalSpec& arrival = w.spec.arrival;
  if (arrival.type == workload::ArrivalType::kTrace) {  // read it now: a bad file is exit 2
    auto t = workload::read_trace(arrival.format, arrival.path);
    if (!t.ok()) return t.status();
    if (t->empty()) return invalid_argument(arrival.path + ": the trace has no records");
  }
  // Open loop without a cap: up to 1024 requests in flight (a thread each); a request that
  // finds them all busy is sent late, and the lateness is reported (client.send_lateness_s).
  const int cap = w.schedule.max_concurrency;
  w.max_workers = cap > 0 ? cap : 1024;
  if (arrival.type == workload::ArrivalType::kClosedLoop) {
    if (cap > 0 && cap < arrival.users)
      return invalid_argument(fmt::format(
          "--max-concurrency {} is below the workload's {} concurrent users", cap, arrival.users));
    w.max_workers = arrival.users;  // one connection per user: never more in flight
  }
  return w;
}

// The files --out and --save-requests name, opened before the run (not after it).
struct BenchFiles {
  std::ofstream out, requests;
};

Status open_files(const BenchOptions& o, BenchFiles* f) {
  if (o.out) {
    f->out.open(*o.out);
    if (!f->out) return invalid_argument("--out " + *o.out + ": cannot write");
  }
  if (o.save_requests) {
    f->requests.open(*o.save_requests);
    if (!f->requests)
      return invalid_argument("--save-requests " + *o.save_requests + ": cannot write");
  }
  return ok_status();
}

// The model to name in requests: --model, else the server's (asking also checks it is up; a
// TGI server need not answer /v1/models). False when the server cannot be reached.
bool resolve_model(const BenchOptions& o, loadgen::ClientOptions* co) {
  if (o.model) {
    co->body.model = *o.model;
    return true;
  }
  auto m = loadgen::fetch_model_name(*co);
  if (m.ok()) {
    co->body.model = *m;
    return true;
  }
  if (co->endpoint != loadgen::Endpoint::kTgi ||
      m.status().message().find("cannot reach") != std::string::npos) {
    std::fprintf(stderr, "prima bench: %s\n", m.status().message().c_str());
    return false;
  }
  co->body.model = "tgi";
  return true;
}

const char* arrival_name(workload::ArrivalType t) {
  switch (t) {
    case workload::ArrivalType::kPoisson:
      return "poisson";
    case workload::ArrivalType::kGamma:
      return "gamma";
    case workload::ArrivalType::kConstant:
      return "constant";
    case workload::ArrivalType::kClosedLoop:
      return "closed_loop";
    case workload::ArrivalType::kTrace:
      return "trace";
  }
  return "?";
}

// The "workload" object of the result: what was sent.
nlohmann::ordered_json workload_json(const BenchOptions& o, const BenchWorkload& w) {
  nlohmann::ordered_json wj;
  if (!w.scenario_file.empty()) wj["scenario"] = w.scenario_file;
  const workload::ArrivalSpec& arrival = w.spec.arrival;
  wj["description"] = loadgen::describe_workload(w.spec, w.duration_s);
  wj["arrival"] = arrival_name(arrival.type);
  if (arrival.type == workload::ArrivalType::kClosedLoop)
    wj["concurrency"] = arrival.users;
  else
    wj["request_rate"] = arrival.rate_rps;
  if (arrival.type == workload::ArrivalType::kGamma) wj["burstiness"] = w.schedule.burstiness;
  wj["num_prompts"] = w.spec.max_requests;
  wj["duration_s"] = std::isfinite(w.duration_s) ? nlohmann::ordered_json(w.duration_s) : nullptr;
  if (o.dataset_path) wj["dataset"] = *o.dataset_path;
  if (arrival.type == workload::ArrivalType::kTrace) wj["trace"] = arrival.path;
  return wj;
}

// Prints the table (and JSON) and writes the files; the exit code.
int report(const BenchOptions& o, const loadgen::BenchInfo& info, const loadgen::RunResult& run,
           BenchFiles* files) {
  const loadgen::BenchStats st = loadgen::compute_stats(run.requests, info.slo, info.stream);
  const std::string json = loadgen::bench_json(info, st, run.requests).dump(2) + "\n";
  const std::string table = loadgen::bench_table(info, st, run.requests);
  if (o.json) {
    std::fputs(json.c_str(), stdout);
    if (!o.quiet) std::fputs(table.c_str(), stderr);
  } else {
    std::fputs(table.c_str(), stdout);
  }
  if (files->out.is_open() && !(files->out << json).flush()) {
    std::fprintf(stderr, "prima bench: --out %s: cannot write\n", o.out->c_str());
    return kExitFailure;
  }
  if (files->requests.is_open() &&
      !(files->requests << loadgen::request_log(info, run.requests)).flush()) {
    std::fprintf(stderr, "prima bench: --save-requests %s: cannot write\n",
                 o.save_requests->c_str());
    return kExitFailure;
  }
  if (st.completed == 0) {
    std::fprintf(stderr, "prima bench: no request completed (%zu failed)\n", st.failed);
    return kExitFailure;
  }
  return kExitOk;
}

// Runs validated options: reads the workload, asks the server for its model, sends, reports.
int run(const BenchOptions& o) {
  auto w = bench_workload(o);
  if (!w.ok()) return bad(w.status().message());
  BenchFiles files;
  if (Status st = open_files(o, &files); !st.ok()) return bad(st.message());
  loadgen::ClientOptions co = o.client();
  if (!resolve_model(o, &co)) return kExitFailure;
  loadgen::BenchInfo info;
  info.url = o.url;
  info.endpoint = loadgen::endpoint_name(co.endpoint);
  info.model = co.body.model;
  info.stream = o.streaming();
  info.seed = w->seed;
  info.workload = workload_json(o, *w);
  info.slo = w->slo;
  info.max_workers = w->max_workers;
  if (!o.quiet)
    std::fprintf(stderr, "prima bench: %s -> %s%s (%s, model %s)\n",
                 info.workload["description"].get<std::string>().c_str(),
                 co.url.scheme_host_port.c_str(),
                 loadgen::endpoint_path(co.endpoint, info.stream).c_str(),
                 info.stream ? "streaming" : "not streaming", info.model.c_str());
  std::signal(SIGPIPE, SIG_IGN);
  loadgen::RunOptions ro;
  ro.client = co;
  ro.max_workers = w->max_workers;
  ro.seed = w->seed;
  ro.dataset = w->dataset.empty() ? nullptr : &w->dataset;
  ro.send_qos = w->send_qos;
  ro.progress = !o.quiet;
  auto result = loadgen::run_bench(w->spec, w->seed, w->duration_s, ro);
  if (!result.ok()) return bad(result.status().message());
  info.wall_s = result->wall_s;
  return report(o, info, *result, &files);
}

}  // namespace

int cmd_bench(const Args& args) {
  po::variables_map vm;
  if (auto done = parse_command_line({"prima bench", bench_flags(), {}, {}, kExamples}, args, &vm))
    return *done;
  const BenchOptions o = bench_options(vm);
  if (Status st = o.validate(); !st.ok()) return bad(st.message());
  return run(o);
}

}  // namespace prima::cli
