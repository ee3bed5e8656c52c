// `prima bench`'s flags and their checks (see bench_options.h).
#include "cli/bench_options.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "cli/flags.h"
#include "engine/config/json_parse.h"
#include "engine/config/json_reader.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

// A positive duration with a unit ("200ms", "1.5s"); bare numbers are refused where ms vs s
// is a classic mistake (SLOs).
Status parse_duration_flag(const std::string& flag, const std::string& v, bool unit_required,
                           double* out) {
  const bool has_unit = !v.empty() && std::isalpha(static_cast<unsigned char>(v.back()));
  if (unit_required && !has_unit)
    return invalid_argument(fmt::format("--{}: '{}' needs a unit (e.g. 200ms, 0.5s)", flag, v));
  if (!config::parse_duration_s(v, out) || !(*out > 0))
    return invalid_argument(
        fmt::format("--{}: '{}' is not a positive duration (e.g. 200ms, 30s, 2m)", flag, v));
  return ok_status();
}

// A duration flag's value once validated.
double seconds(const std::string& text) {
  double s = 0;
  config::parse_duration_s(text, &s);
  return s;
}

// Requests/s: a positive number, or "inf" / "infinity".
bool parse_rate(const std::string& v, double* out) {
  if (v == "inf" || v == "infinity") {
    *out = loadgen::kInf;
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

Result<nlohmann::json> parse_extra_body(const std::string& text) {
  config::JsonParseError perr;
  auto extra = config::parse_json(text, &perr);
  if (!extra) return invalid_argument("--extra-body: not JSON: " + config::describe(perr));
  if (!extra->is_object())
    return invalid_argument("--extra-body: expected a JSON object like '{\"seed\": 7}'");
  return std::move(*extra);
}

Status check_sampling(const BenchOptions& o) {
  if (o.temperature && !(*o.temperature >= 0 && *o.temperature <= 100))
    return invalid_argument(
        fmt::format("--temperature must be between 0 and 100, got {}", *o.temperature));
  if (o.top_p && !(*o.top_p > 0 && *o.top_p <= 1))
    return invalid_argument(fmt::format("--top-p must be > 0 and <= 1, got {}", *o.top_p));
  if (o.top_k && *o.top_k < -1)
    return invalid_argument(
        fmt::format("--top-k must be -1, 0 (off) or a positive integer, got {}", *o.top_k));
  return ok_status();
}

Status check_schedule(const BenchOptions& o) {
  double x = 0;
  if (o.request_rate && !parse_rate(*o.request_rate, &x))
    return invalid_argument("--request-rate: '" + *o.request_rate +
                            "' is not a positive number or 'inf'");
  if (o.concurrency && *o.concurrency < 1)
    return invalid_argument(fmt::format("--concurrency must be >= 1, got {}", *o.concurrency));
  if (o.max_concurrency && *o.max_concurrency < 1)
    return invalid_argument(
        fmt::format("--max-concurrency must be >= 1, got {}", *o.max_concurrency));
  if (o.num_prompts && *o.num_prompts < 1)
    return invalid_argument(fmt::format("--num-prompts: {} must be >= 1", *o.num_prompts));
  if (o.duration)
    if (Status st = parse_duration_flag("duration", *o.duration, false, &x); !st.ok()) return st;
  if (o.scenario && (o.request_rate || o.concurrency || o.trace || o.input_len || o.output_len))
    return invalid_argument(
        "--scenario gives the workload: drop the rate, concurrency, trace and length flags (or "
        "use --set workload.KEY=VALUE)");
  if (!o.scenario && !o.sets.empty()) return invalid_argument("--set needs --scenario");
  return ok_status();
}

}  // namespace

Status BenchOptions::validate() const {
  if (stream_flag && no_stream)
    return invalid_argument("--stream and --no-stream exclude each other");
  if (auto base = loadgen::parse_base_url(url); !base.ok()) return base.status();
  loadgen::Endpoint e;
  if (!loadgen::parse_endpoint(endpoint, &e))
    return invalid_argument("--endpoint '" + endpoint + "': expected completions, chat or tgi");
  if (extra_body)
    if (auto extra = parse_extra_body(*extra_body); !extra.ok()) return extra.status();
  if (Status st = check_sampling(*this); !st.ok()) return st;
  double x = 0;
  if (Status st = parse_duration_flag("timeout", timeout, false, &x); !st.ok()) return st;
  if (Status st = check_schedule(*this); !st.ok()) return st;
  for (const auto& [flag, text] :
       {std::pair{"slo-ttft", &slo_ttft}, std::pair{"slo-tpot", &slo_tpot},
        std::pair{"slo-e2e", &slo_e2e}})
    if (*text)
      if (Status st = parse_duration_flag(flag, **text, true, &x); !st.ok()) return st;
  return ok_status();
}

loadgen::ClientOptions BenchOptions::client() const {
  loadgen::ClientOptions co;
  co.url = *loadgen::parse_base_url(url);
  loadgen::parse_endpoint(endpoint, &co.endpoint);
  co.body.stream = streaming();
  co.body.ignore_eos = ignore_eos;
  if (extra_body) co.body.extra = *parse_extra_body(*extra_body);
  if (temperature) co.body.extra["temperature"] = *temperature;
  if (top_p) co.body.extra["top_p"] = *top_p;
  if (top_k) co.body.extra["top_k"] = *top_k;
  co.keep_alive = keep_alive;
  co.api_key = api_key;
  co.timeout_s = seconds(timeout);
  return co;
}

loadgen::ScheduleOptions BenchOptions::schedule() const {
  loadgen::ScheduleOptions so;
  if (request_rate) parse_rate(*request_rate, &so.request_rate);
  so.arrival = arrival;
  so.burstiness = burstiness;
  so.concurrency = concurrency.value_or(0);
  so.max_concurrency = max_concurrency.value_or(0);
  so.num_prompts = static_cast<std::uint64_t>(num_prompts.value_or(0));
  if (duration) so.duration_s = seconds(*duration);
  so.input_len = input_len.value_or(so.input_len);
  so.output_len = output_len.value_or(so.output_len);
  so.range_ratio = range_ratio;
  so.trace_path = trace.value_or("");
  so.trace_format = trace_format;
  so.time_scale = time_scale;
  // Rate inf (every request due at once): at most 256 in flight unless --max-concurrency says.
  if (so.concurrency == 0 && !std::isfinite(so.request_rate) && so.max_concurrency == 0)
    so.max_concurrency = 256;
  if (so.num_prompts == 0 && !std::isfinite(so.duration_s) && !scenario && so.trace_path.empty())
    so.num_prompts = 1000;
  return so;
}

loadgen::SloBounds BenchOptions::slo(loadgen::SloBounds base) const {
  if (slo_ttft) base.ttft_s = seconds(*slo_ttft);
  if (slo_tpot) base.tpot_s = seconds(*slo_tpot);
  if (slo_e2e) base.e2e_s = seconds(*slo_e2e);
  return base;
}

po::options_description bench_flags() {
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
  return opts;
}

BenchOptions bench_options(const po::variables_map& vm) {
  BenchOptions o;
  get_flag(vm, {"url", "base-url"}, &o.url);
  get_flag(vm, {"endpoint"}, &o.endpoint);
  get_flag(vm, {"model"}, &o.model);
  o.stream_flag = vm.count("stream") > 0;
  o.no_stream = vm.count("no-stream") > 0;
  o.keep_alive = vm.count("no-keep-alive") == 0;
  o.ignore_eos = vm.count("ignore-eos") > 0;
  get_flag(vm, {"temperature"}, &o.temperature);
  get_flag(vm, {"top-p"}, &o.top_p);
  get_flag(vm, {"top-k"}, &o.top_k);
  get_flag(vm, {"extra-body"}, &o.extra_body);
  if (vm.count("api-key"))
    o.api_key = vm["api-key"].as<std::string>();
  else if (const char* k = std::getenv("PRIMA_API_KEY"))
    o.api_key = k;
  get_flag(vm, {"timeout"}, &o.timeout);
  get_flag(vm, {"request-rate", "rate"}, &o.request_rate);
  get_flag(vm, {"arrival"}, &o.arrival);
  get_flag(vm, {"burstiness"}, &o.burstiness);
  get_flag(vm, {"concurrency"}, &o.concurrency);
  get_flag(vm, {"max-concurrency"}, &o.max_concurrency);
  get_flag(vm, {"num-prompts"}, &o.num_prompts);
  get_flag(vm, {"duration"}, &o.duration);
  get_flag(vm, {"random-input-len", "input-len"}, &o.input_len);
  get_flag(vm, {"random-output-len", "output-len"}, &o.output_len);
  get_flag(vm, {"random-range-ratio"}, &o.range_ratio);
  get_flag(vm, {"dataset-path", "dataset"}, &o.dataset_path);
  get_flag(vm, {"trace"}, &o.trace);
  get_flag(vm, {"trace-format"}, &o.trace_format);
  get_flag(vm, {"time-scale"}, &o.time_scale);
  get_flag(vm, {"scenario"}, &o.scenario);
  get_flag(vm, {"set"}, &o.sets);
  get_flag(vm, {"slo-ttft"}, &o.slo_ttft);
  get_flag(vm, {"slo-tpot"}, &o.slo_tpot);
  get_flag(vm, {"slo-e2e"}, &o.slo_e2e);
  get_flag(vm, {"seed"}, &o.seed);
  get_flag(vm, {"out"}, &o.out);
  get_flag(vm, {"save-requests"}, &o.save_requests);
  o.json = vm.count("json") > 0;
  o.quiet = vm.count("quiet") > 0;
  return o;
}

}  // namespace prima::cli
