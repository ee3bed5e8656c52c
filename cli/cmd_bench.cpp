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
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "engine/config/json_parse.h"
#include "engine/config/json_reader.h"
#include "engine/config/scenario.h"
#include "engine/workload/trace.h"
#include "loadgen/client.h"
#include "loadgen/output.h"
#include "loadgen/request_log.h"
#include "loadgen/runner.h"
#include "loadgen/schedule.h"
#include "loadgen/stats.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

using loadgen::kInf;

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

// A duration with a unit ("200ms", "1.5s"); bare numbers are refused where ms vs s is a
// classic mistake (SLOs).
bool parse_with_unit(const std::string& flag, const std::string& v, bool unit_required, double* out,
                     std::string* err) {
  bool has_unit = !v.empty() && std::isalpha(static_cast<unsigned char>(v.back()));
  if (unit_required && !has_unit) {
    *err = fmt::format("--{}: '{}' needs a unit (e.g. 200ms, 0.5s)", flag, v);
    return false;
  }
  if (!config::parse_duration_s(v, out) || !(*out > 0)) {
    *err = fmt::format("--{}: '{}' is not a positive duration (e.g. 200ms, 30s, 2m)", flag, v);
    return false;
  }
  return true;
}

bool parse_rate(const std::string& v, double* out) {
  if (v == "inf" || v == "infinity") {
    *out = kInf;
    return true;
  }
  try {
    std::size_t pos = 0;
    *out = std::stod(v, &pos);
    return pos == v.size() && *out > 0;
  } catch (...) {
    return false;
  }
}

int bad(const std::string& msg) {
  std::fprintf(stderr, "prima bench: %s\n", msg.c_str());
  return kExitBadInput;
}

// The first of several alias flags that was given.
template <typename T>
bool get_alias(const po::variables_map& vm, std::initializer_list<const char*> names, T* out) {
  for (const char* n : names)
    if (vm.count(n)) {
      *out = vm[n].as<T>();
      return true;
    }
  return false;
}

}  // namespace

int cmd_bench(const Args& args) {
  po::options_description opts("prima bench [options]");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("url", po::value<std::string>(), "server base URL (default http://127.0.0.1:8000)")
      ("base-url", po::value<std::string>(), "alias of --url (vllm)")
      ("endpoint", po::value<std::string>()->default_value("completions"),
       "completions (/v1/completions) | chat (/v1/chat/completions) | tgi (/generate[_stream])")
      ("model", po::value<std::string>(), "model name to send (default: GET /v1/models)")
      ("request-rate", po::value<std::string>(), "requests/s (open loop); 'inf' = all at once")
      ("rate", po::value<std::string>(), "alias of --request-rate")
      ("arrival", po::value<std::string>()->default_value("poisson"),
       "poisson | constant | gamma (with --request-rate)")
      ("burstiness", po::value<double>()->default_value(1.0),
       "gamma shape of the gaps (vllm): < 1 burstier, 1 = poisson")
      ("concurrency", po::value<int>(), "closed loop: N requests in flight at all times")
      ("max-concurrency", po::value<int>(),
       "cap on requests in flight (default: 256 at rate inf, else 1024)")
      ("num-prompts", po::value<long long>(), "requests to send (default 1000 without --duration)")
      ("duration", po::value<std::string>(), "stop sending after this long (30s, 2m)")
      ("random-input-len", po::value<int>(), "prompt tokens (default 1024)")
      ("input-len", po::value<int>(), "alias of --random-input-len")
      ("random-output-len", po::value<int>(), "max tokens to generate (default 128)")
      ("output-len", po::value<int>(), "alias of --random-output-len")
      ("random-range-ratio", po::value<double>()->default_value(0.0),
       "lengths uniform in [len*(1-r), len*(1+r)]; 0 = fixed")
      ("dataset-path", po::value<std::string>(), "JSONL prompts: {\"prompt\": ..., \"output_tokens\": N}")
      ("dataset", po::value<std::string>(), "alias of --dataset-path")
      ("trace", po::value<std::string>(), "replay a trace's arrivals and lengths (Azure CSV or JSONL)")
      ("trace-format", po::value<std::string>()->default_value("azure"), "azure | jsonl")
      ("time-scale", po::value<double>()->default_value(1.0), "multiply trace offsets by this")
      ("scenario", po::value<std::string>(), "take workload, seed and SLO from a scenario file")
      ("set", po::value<std::vector<std::string>>()->composing(), "override a scenario field: PATH=VALUE")
      ("stream", "stream the answers (SSE; the default)")
      ("no-stream", "ask for whole answers (no TTFT/TPOT/ITL)")
      ("no-keep-alive", "open a new connection for every request")
      ("ignore-eos", "send \"ignore_eos\": true (OpenAI endpoints; vLLM's extension)")
      ("temperature", po::value<double>(), "send this sampling temperature (0: greedy)")
      ("top-p", po::value<double>(), "send this nucleus cut (0 < p <= 1)")
      ("top-k", po::value<int>(), "send this top-k cut (-1 or 0: off)")
      ("extra-body", po::value<std::string>(),
       "a JSON object merged into every request body (TGI: into \"parameters\"), e.g. "
       "'{\"seed\": 7, \"logit_bias\": {\"42\": -100}}'")
      ("slo-ttft", po::value<std::string>(), "SLO bound on TTFT (200ms)")
      ("slo-tpot", po::value<std::string>(), "SLO bound on TPOT (50ms)")
      ("slo-e2e", po::value<std::string>(), "SLO bound on E2E latency (2s)")
      ("seed", po::value<unsigned long long>(), "random seed (default 0; a scenario's own seed)")
      ("api-key", po::value<std::string>(), "send 'Authorization: Bearer KEY' (default $PRIMA_API_KEY)")
      ("timeout", po::value<std::string>()->default_value("600s"), "per-request read timeout")
      ("out", po::value<std::string>(), "write the JSON result to this file")
      ("save-requests", po::value<std::string>(),
       "write every request (arrival, lengths, TTFT, TPOT, ITL, E2E, status) to this JSONL "
       "file, for prima replay")
      ("json", "print the JSON result on stdout (the table goes to stderr)")
      ("quiet,q", "no progress lines");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return bad(std::string(e.what()) + " (see prima bench --help)");
  }
  if (vm.count("help")) {
    std::cout << opts << kExamples;
    return kExitOk;
  }
  if (vm.count("stream") && vm.count("no-stream"))
    return bad("--stream and --no-stream exclude each other");
  const bool stream = !vm.count("no-stream");
  const bool quiet = vm.count("quiet") > 0;
  const bool json_stdout = vm.count("json") > 0;

  // Where and how to send.
  loadgen::ClientOptions co;
  std::string url = "http://127.0.0.1:8000";
  get_alias(vm, {"url", "base-url"}, &url);
  auto base = loadgen::parse_base_url(url);
  if (!base.ok()) return bad(base.status().message());
  co.url = *base;
  if (!loadgen::parse_endpoint(vm["endpoint"].as<std::string>(), &co.endpoint))
    return bad("--endpoint '" + vm["endpoint"].as<std::string>() +
               "': expected completions, chat or tgi");
  co.body.stream = stream;
  co.body.ignore_eos = vm.count("ignore-eos") > 0;
  if (vm.count("extra-body")) {
    config::JsonParseError perr;
    auto extra = config::parse_json(vm["extra-body"].as<std::string>(), &perr);
    if (!extra) return bad("--extra-body: not JSON: " + config::describe(perr));
    if (!extra->is_object())
      return bad("--extra-body: expected a JSON object like '{\"seed\": 7}'");
    co.body.extra = std::move(*extra);
  }
  if (vm.count("temperature")) {
    const double t = vm["temperature"].as<double>();
    if (!(t >= 0 && t <= 100)) return bad("--temperature must be between 0 and 100");
    co.body.extra["temperature"] = t;
  }
  if (vm.count("top-p")) {
    const double tp = vm["top-p"].as<double>();
    if (!(tp > 0 && tp <= 1)) return bad("--top-p must be > 0 and <= 1");
    co.body.extra["top_p"] = tp;
  }
  if (vm.count("top-k")) {
    const int k = vm["top-k"].as<int>();
    if (k < -1) return bad("--top-k must be -1, 0 (off) or a positive integer");
    co.body.extra["top_k"] = k;
  }
  co.keep_alive = !vm.count("no-keep-alive");
  if (vm.count("api-key"))
    co.api_key = vm["api-key"].as<std::string>();
  else if (const char* k = std::getenv("PRIMA_API_KEY"))
    co.api_key = k;
  std::string err;
  if (!parse_with_unit("timeout", vm["timeout"].as<std::string>(), false, &co.timeout_s, &err))
    return bad(err);

  // What to send.
  loadgen::ScheduleOptions so;
  std::string rate_text;
  if (get_alias(vm, {"request-rate", "rate"}, &rate_text) &&
      !parse_rate(rate_text, &so.request_rate))
    return bad("--request-rate: '" + rate_text + "' is not a positive number or 'inf'");
  so.arrival = vm["arrival"].as<std::string>();
  so.burstiness = vm["burstiness"].as<double>();
  if (vm.count("concurrency")) {
    so.concurrency = vm["concurrency"].as<int>();
    if (so.concurrency < 1) return bad("--concurrency must be >= 1");
  }
  if (vm.count("max-concurrency")) {
    so.max_concurrency = vm["max-concurrency"].as<int>();
    if (so.max_concurrency < 1) return bad("--max-concurrency must be >= 1");
  }
  if (vm.count("num-prompts")) {
    long long n = vm["num-prompts"].as<long long>();
    if (n < 1) return bad(fmt::format("--num-prompts: {} must be >= 1", n));
    so.num_prompts = static_cast<std::uint64_t>(n);
  }
  if (vm.count("duration") &&
      !parse_with_unit("duration", vm["duration"].as<std::string>(), false, &so.duration_s, &err))
    return bad(err);
  get_alias(vm, {"random-input-len", "input-len"}, &so.input_len);
  get_alias(vm, {"random-output-len", "output-len"}, &so.output_len);
  so.range_ratio = vm["random-range-ratio"].as<double>();
  if (vm.count("trace")) so.trace_path = vm["trace"].as<std::string>();
  so.trace_format = vm["trace-format"].as<std::string>();
  so.time_scale = vm["time-scale"].as<double>();
  // Rate inf (every request due at once): at most 256 in flight unless --max-concurrency says.
  if (so.concurrency == 0 && !std::isfinite(so.request_rate) && so.max_concurrency == 0)
    so.max_concurrency = 256;
  if (so.num_prompts == 0 && !std::isfinite(so.duration_s) && !vm.count("scenario") &&
      so.trace_path.empty())
    so.num_prompts = 1000;

  std::uint64_t seed = vm.count("seed") ? vm["seed"].as<unsigned long long>() : 0;
  loadgen::SloBounds slo;
  workload::WorkloadSpec spec;
  double duration_s = so.duration_s;
  bool send_qos = false;
  nlohmann::ordered_json wj;
  if (vm.count("scenario")) {
    if (vm.count("request-rate") || vm.count("rate") || vm.count("concurrency") ||
        vm.count("trace") || vm.count("random-input-len") || vm.count("input-len") ||
        vm.count("random-output-len") || vm.count("output-len"))
      return bad(
          "--scenario gives the workload: drop the rate, concurrency, trace and length "
          "flags (or use --set workload.KEY=VALUE)");
    std::vector<std::string> sets;
    if (vm.count("set")) sets = vm["set"].as<std::vector<std::string>>();
    auto sc = config::load_scenario(vm["scenario"].as<std::string>(), sets);
    if (!sc.ok()) return bad(sc.status().message());
    spec = sc->workload;
    if (so.num_prompts > 0) spec.max_requests = so.num_prompts;
    if (!vm.count("duration")) duration_s = sc->duration_s;
    if (!vm.count("seed")) seed = sc->seed;
    slo = {sc->slo.ttft_s, sc->slo.tpot_s, sc->slo.e2e_s};
    for (int c = 0; c < kNumPriorities; ++c)
      send_qos = send_qos || spec.sla_s[c] > 0 || (c != 1 && spec.priority_mix[c] > 0);
    wj["scenario"] = sc->file;
  } else {
    if (vm.count("set")) return bad("--set needs --scenario");
    auto w = loadgen::workload_from_options(so);
    if (!w.ok()) return bad(w.status().message());
    spec = std::move(*w);
  }
  for (auto [flag, dst] : {std::pair{"slo-ttft", &slo.ttft_s}, std::pair{"slo-tpot", &slo.tpot_s},
                           std::pair{"slo-e2e", &slo.e2e_s}})
    if (vm.count(flag) && !parse_with_unit(flag, vm[flag].as<std::string>(), true, dst, &err))
      return bad(err);
  std::vector<loadgen::DatasetRow> dataset;
  std::string dataset_path;
  if (get_alias(vm, {"dataset-path", "dataset"}, &dataset_path)) {
    auto d = loadgen::read_dataset(dataset_path);
    if (!d.ok()) return bad(d.status().message());
    dataset = std::move(*d);
  }
  if (spec.arrival.type == workload::ArrivalType::kTrace) {  // read it now: a bad file is exit 2
    auto t = workload::read_trace(spec.arrival.format, spec.arrival.path);
    if (!t.ok()) return bad(t.status().message());
    if (t->empty()) return bad(spec.arrival.path + ": the trace has no records");
  }

  // Open loop without a cap: up to 1024 requests in flight (a thread each); a request that
  // finds them all busy is sent late, and the lateness is reported (client.send_lateness_s).
  int max_workers = so.max_concurrency > 0 ? so.max_concurrency : 1024;
  if (spec.arrival.type == workload::ArrivalType::kClosedLoop) {
    if (so.max_concurrency > 0 && so.max_concurrency < spec.arrival.users)
      return bad(fmt::format("--max-concurrency {} is below the workload's {} concurrent users",
                             so.max_concurrency, spec.arrival.users));
    max_workers = spec.arrival.users;  // one connection per user: never more in flight
  }

  std::ofstream out_file, requests_file;
  if (vm.count("out")) {  // fail before the run, not after it
    out_file.open(vm["out"].as<std::string>());
    if (!out_file) return bad("--out " + vm["out"].as<std::string>() + ": cannot write");
  }
  if (vm.count("save-requests")) {
    requests_file.open(vm["save-requests"].as<std::string>());
    if (!requests_file)
      return bad("--save-requests " + vm["save-requests"].as<std::string>() + ": cannot write");
  }

  // The model: asked from the server when not given (this also checks it is up).
  std::string model;
  if (vm.count("model")) {
    model = vm["model"].as<std::string>();
  } else {
    auto m = loadgen::fetch_model_name(co);
    if (!m.ok()) {
      if (co.endpoint != loadgen::Endpoint::kTgi ||
          m.status().message().find("cannot reach") != std::string::npos) {
        std::fprintf(stderr, "prima bench: %s\n", m.status().message().c_str());
        return kExitFailure;
      }
      model = "tgi";  // a TGI server need not answer /v1/models
    } else {
      model = *m;
    }
  }
  co.body.model = model;

  wj["description"] = loadgen::describe_workload(spec, duration_s);
  wj["arrival"] = [&] {
    switch (spec.arrival.type) {
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
  }();
  if (spec.arrival.type == workload::ArrivalType::kClosedLoop)
    wj["concurrency"] = spec.arrival.users;
  else
    wj["request_rate"] = spec.arrival.rate_rps;
  if (spec.arrival.type == workload::ArrivalType::kGamma) wj["burstiness"] = so.burstiness;
  wj["num_prompts"] = spec.max_requests;
  wj["duration_s"] = std::isfinite(duration_s) ? nlohmann::ordered_json(duration_s) : nullptr;
  if (!dataset_path.empty()) wj["dataset"] = dataset_path;
  if (spec.arrival.type == workload::ArrivalType::kTrace) wj["trace"] = spec.arrival.path;

  if (!quiet)
    std::fprintf(stderr, "prima bench: %s -> %s%s (%s, model %s)\n",
                 wj["description"].get<std::string>().c_str(), co.url.scheme_host_port.c_str(),
                 loadgen::endpoint_path(co.endpoint, stream).c_str(),
                 stream ? "streaming" : "not streaming", model.c_str());
  std::signal(SIGPIPE, SIG_IGN);
  loadgen::RunOptions ro;
  ro.client = co;
  ro.max_workers = max_workers;
  ro.seed = seed;
  ro.dataset = dataset.empty() ? nullptr : &dataset;
  ro.send_qos = send_qos;
  ro.progress = !quiet;
  auto run = loadgen::run_bench(spec, seed, duration_s, ro);
  if (!run.ok()) return bad(run.status().message());

  const loadgen::BenchStats st = loadgen::compute_stats(run->requests, slo, stream);
  loadgen::BenchInfo info;
  info.url = url;
  info.endpoint = loadgen::endpoint_name(co.endpoint);
  info.model = model;
  info.stream = stream;
  info.seed = seed;
  info.workload = wj;
  info.slo = slo;
  info.max_workers = max_workers;
  info.wall_s = run->wall_s;
  const std::string json = loadgen::bench_json(info, st, run->requests).dump(2) + "\n";
  const std::string table = loadgen::bench_table(info, st, run->requests);
  if (json_stdout) {
    std::fputs(json.c_str(), stdout);
    if (!quiet) std::fputs(table.c_str(), stderr);
  } else {
    std::fputs(table.c_str(), stdout);
  }
  if (out_file.is_open() && !(out_file << json).flush()) {
    std::fprintf(stderr, "prima bench: --out %s: cannot write\n",
                 vm["out"].as<std::string>().c_str());
    return kExitFailure;
  }
  if (requests_file.is_open() &&
      !(requests_file << loadgen::request_log(info, run->requests)).flush()) {
    std::fprintf(stderr, "prima bench: --save-requests %s: cannot write\n",
                 vm["save-requests"].as<std::string>().c_str());
    return kExitFailure;
  }
  if (st.completed == 0) {
    std::fprintf(stderr, "prima bench: no request completed (%zu failed)\n", st.failed);
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace prima::cli
