// `prima serve`'s flags and their checks (see serve_options.h).
#include "cli/serve_options.h"

#include <fmt/format.h>

#include <cstdlib>

#include "backends/sim/emulator.h"
#include "cli/flags.h"
#include "cli/synthetic_option.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

// The flags of each backend, in the order their misuse is reported.
constexpr const char* kSimOnly[] = {"scenario", "set", "speed"};
constexpr const char* kRealOnly[] = {
    "model",    "manifest",     "kernel-threads", "tp",
    "pp",       "max-num-seqs", "max-model-len",  "max-num-batched-tokens",
    "repack",   "no-repack",    "device",         "comm-timeout",
    "replicas", "synthetic",    "quantization"};

po::options_description server_flags() {
  po::options_description opts("prima serve [options]");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("backend", po::value<std::string>()->default_value("sim"),
       "sim: the scenario's simulated cluster paced to the wall clock; real: a GGUF model on "
       "this machine's CPU (--model)")
      ("host", po::value<std::string>()->default_value("127.0.0.1"), "address to listen on")
      ("port", po::value<int>()->default_value(8000), "TCP port (0: any free port)")
      ("port-file", po::value<std::string>(), "write the port listened on to this file once ready")
      ("api-key", po::value<std::string>(),
       "require 'Authorization: Bearer KEY' (default: $PRIMA_API_KEY; none when unset)")
      ("max-concurrent", po::value<int>()->default_value(256),
       "generation requests in progress at once; more get 429 with Retry-After")
      ("max-body-bytes", po::value<std::size_t>()->default_value(1 << 20),
       "largest request body, chunked or not; larger ones get 413")
      ("max-header-bytes", po::value<std::size_t>()->default_value(32768),
       "largest request line + headers; larger ones get 431")
      ("max-connections", po::value<int>()->default_value(10000),
       "open connections at most (bounded by the open-file limit); more get 503 at once")
      ("header-timeout", po::value<double>()->default_value(10.0),
       "seconds from a request's first byte to the end of its headers; later: 408")
      ("body-timeout", po::value<double>()->default_value(30.0),
       "seconds from the end of the headers to the end of the body; later: 408")
      ("idle-timeout", po::value<double>()->default_value(5.0),
       "seconds a connection may wait for its next request (keep-alive)")
      ("default-max-tokens", po::value<int>()->default_value(16),
       "output tokens of a request that does not say")
      ("max-tokens", po::value<int>()->default_value(0),
       "largest max_tokens accepted (0: the model's context length)")
      ("threads", po::value<int>()->default_value(0), "HTTP worker threads (0: max-concurrent + 16)")
      ("served-model-name", po::value<std::vector<std::string>>()->multitoken()->composing(),
       "the names clients may send as \"model\", the first one reported (default: the GGUF file "
       "name without .gguf, or the scenario's model); TGI clients' placeholders \"tgi\" and "
       "\"dummy\" are always accepted")
      ("allowed-origins", po::value<std::vector<std::string>>()->multitoken()->composing(),
       "browser origins allowed to call the API (CORS), e.g. https://app.example.com, or * for "
       "any; default: none (no CORS headers)")
      ("drain-timeout", po::value<double>()->default_value(30.0),
       "on SIGTERM, seconds to let requests in progress finish");
  // clang-format on
  return opts;
}

po::options_description sim_flags() {
  po::options_description opts("--backend sim");
  // clang-format off
  opts.add_options()
      ("scenario", po::value<std::string>(),
       "scenario file (model and cluster to serve); default: the built-in one")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override a scenario field: PATH=VALUE (repeatable)")
      ("speed", po::value<double>()->default_value(1.0),
       "simulated seconds per wall-clock second (20: twenty times faster)");
  // clang-format on
  return opts;
}

po::options_description real_flags() {
  po::options_description opts("--backend real");
  // clang-format off
  opts.add_options()
      ("model", po::value<std::string>(),
       "GGUF model file (e.g. models/SmolLM2-135M-Instruct.Q4_1.gguf)")
      ("manifest", po::value<std::string>(), "sha256 manifest to verify the model file against")
      ("tp", po::value<int>()->default_value(1), "tensor-parallel ranks (run under mpirun -np TP*PP)")
      ("pp", po::value<int>()->default_value(1), "pipeline-parallel ranks")
      ("replicas", po::value<int>()->default_value(1),
       "replicas of TP x PP ranks in one mpirun job (-np replicas*TP*PP); the engine on rank 0 "
       "routes over them and re-routes a failed replica's requests to the others")
      ("comm-timeout", po::value<double>()->default_value(300),
       "seconds a rank waits for another before the step fails (a host down, a link cut, a hung "
       "process); the replica is then taken out of routing and /v2/health/ready answers 503")
      ("kernel-threads", po::value<int>()->default_value(0),
       "CPU threads per rank for the kernels (0: all cores)")
      ("max-num-seqs", po::value<int>()->default_value(8),
       "sequences batched together at most (the KV cache holds this many full contexts)")
      ("max-num-batched-tokens", po::value<int>()->default_value(0),
       "tokens one engine step computes at most: longer prompts are prefilled in chunks of this "
       "many (0: the scheduler's default, 8192)")
      ("max-model-len", po::value<int>()->default_value(0),
       "context length served, prompt + output (0: the model's)")
      ("repack", po::bool_switch(),
       "pack the Q4_1/Q8_0 weights into 16-row panels for the AVX-512 VNNI kernels (the default "
       "where the CPU has them; else a note and the GGUF layout): the same results as the GGUF "
       "layout (llama.cpp's operations, bit for bit), about 1.5x the decode tokens per second, "
       "+21 MiB peak memory for SmolLM2")
      ("no-repack", po::bool_switch(),
       "keep the weights in the GGUF layout (no packed copy: less memory, the kernels llama.cpp's "
       "CPU build runs; the same results)");
  // clang-format on
  add_device_flag(opts);
  add_synthetic_flag(opts);
  return opts;
}

// The backend-independent checks: the backend's name, each flag against it, the HTTP limits.
Status check_common(const ServeOptions& o) {
  if (o.backend != "sim" && o.backend != "real")
    return invalid_argument(fmt::format("--backend {}: must be 'sim' or 'real'", o.backend));
  const bool real = o.backend == "real";
  for (const char* f : kSimOnly)
    if (real && o.given.count(f))
      return invalid_argument(fmt::format("--{} applies to --backend sim only", f));
  for (const char* f : kRealOnly)
    if (!real && o.given.count(f))
      return invalid_argument(fmt::format("--{} applies to --backend real only", f));
  if (o.repack && o.no_repack)
    return invalid_argument("--repack and --no-repack exclude each other");
  if (real && o.model_path.empty() && o.synthetic.empty())
    return invalid_argument("--backend real needs --model FILE.gguf (or --synthetic NAME)");
  if (real) PRIMA_RETURN_IF_ERROR(check_model_source(o.model_path, o.synthetic));
  for (const auto& n : o.served_names)
    if (n.empty() || n.size() > 256)
      return invalid_argument("--served-model-name: a name must be 1 to 256 characters");
  if (!(o.drain_timeout_s >= 0))
    return invalid_argument(fmt::format("--drain-timeout: {:g} must be >= 0", o.drain_timeout_s));
  return o.http.validate();
}

}  // namespace

Status ServeOptions::validate() const {
  if (Status st = check_common(*this); !st.ok()) return st;
  if (backend == "sim") {
    sim::EmulatorOptions eo;
    eo.speed = speed;
    return eo.validate();
  }
  if (!(comm_timeout_s > 0))
    return invalid_argument(fmt::format("--comm-timeout must be > 0, got {:g}", comm_timeout_s));
  if (replicas < 1)
    return invalid_argument(fmt::format("--replicas must be >= 1, got {}", replicas));
  if (max_num_seqs < 1 || max_model_len < 0 || kernel_threads < 0 || max_num_batched_tokens < 0)
    return invalid_argument(
        "--max-num-seqs must be >= 1, --max-model-len, --max-num-batched-tokens and "
        "--kernel-threads >= 0");
  PRIMA_RETURN_IF_ERROR(device.validate());
  return device.check_parallelism(tp, pp);
}

po::options_description serve_flags() {
  po::options_description all;
  all.add(server_flags()).add(sim_flags()).add(real_flags());
  return all;
}

ServeOptions serve_options(const po::variables_map& vm) {
  ServeOptions o;
  server::ServerOptions& so = o.http;
  get_flag(vm, {"backend"}, &o.backend);
  get_flag(vm, {"host"}, &so.host);
  get_flag(vm, {"port"}, &so.port);
  get_flag(vm, {"port-file"}, &o.port_file);
  get_flag(vm, {"api-key"}, &so.api_key);
  if (so.api_key.empty())
    if (const char* k = std::getenv("PRIMA_API_KEY")) so.api_key = k;
  get_flag(vm, {"max-concurrent"}, &so.max_concurrent);
  get_flag(vm, {"max-body-bytes"}, &so.max_body_bytes);
  get_flag(vm, {"max-header-bytes"}, &so.max_header_bytes);
  get_flag(vm, {"max-connections"}, &so.max_connections);
  get_flag(vm, {"header-timeout"}, &so.header_timeout_s);
  get_flag(vm, {"body-timeout"}, &so.body_timeout_s);
  get_flag(vm, {"idle-timeout"}, &so.idle_timeout_s);
  get_flag(vm, {"default-max-tokens"}, &so.default_max_tokens);
  get_flag(vm, {"max-tokens"}, &so.max_tokens_cap);
  get_flag(vm, {"threads"}, &so.threads);
  get_flag(vm, {"drain-timeout"}, &o.drain_timeout_s);
  get_flag(vm, {"scenario"}, &o.scenario_path);
  get_flag(vm, {"set"}, &o.sets);
  get_flag(vm, {"speed"}, &o.speed);
  get_flag(vm, {"model"}, &o.model_path);
  get_flag(vm, {"manifest"}, &o.manifest);
  get_flag(vm, {"served-model-name"}, &o.served_names);
  get_flag(vm, {"allowed-origins"}, &so.allowed_origins);
  get_flag(vm, {"tp"}, &o.tp);
  get_flag(vm, {"pp"}, &o.pp);
  get_flag(vm, {"comm-timeout"}, &o.comm_timeout_s);
  get_flag(vm, {"replicas"}, &o.replicas);
  get_flag(vm, {"kernel-threads"}, &o.kernel_threads);
  get_flag(vm, {"max-num-seqs"}, &o.max_num_seqs);
  get_flag(vm, {"max-num-batched-tokens"}, &o.max_num_batched_tokens);
  get_flag(vm, {"max-model-len"}, &o.max_model_len);
  get_flag(vm, {"repack"}, &o.repack);
  get_flag(vm, {"no-repack"}, &o.no_repack);
  o.device = device_options(vm);
  o.synthetic = synthetic_flag(vm);
  for (const auto& [name, value] : vm)
    if (!value.defaulted()) o.given.insert(name);
  return o;
}

void apply_served_names(const ServeOptions& o, server::ModelInfo* model) {
  if (o.served_names.empty()) return;
  model->name = o.served_names.front();
  model->aliases.assign(o.served_names.begin() + 1, o.served_names.end());
}

}  // namespace prima::cli
