// `prima serve --backend sim|real ...`: serves the OpenAI, TGI and KServe v2 APIs over HTTP
// (server/). With --backend sim the scenario's cluster (the built-in default without
// --scenario) runs in the simulator paced to the wall clock (backends/sim/emulator.h): only
// HTTP requests arrive (the scenario's workload is not generated) and tokens are released at
// their simulated times, `--speed` times faster than real time. With --backend real a GGUF
// model runs on this machine's CPU (serve_real.cpp; TP/PP ranks under mpirun). This file
// parses the flags and runs the sim backend; serve_http.cpp holds what both share (HTTP
// thread, signals, draining).
#include <fmt/format.h>
#include <pthread.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "backends/sim/emulator.h"
#include "backends/sim/sim_cluster.h"
#include "cli/commands.h"
#include "cli/serve.h"
#include "engine/scenario/scenario.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

int serve_sim(const ServeOptions& o) {
  sim::EmulatorOptions eo;
  eo.speed = o.speed;
  if (Status st = eo.validate(); !st.ok()) {
    std::fprintf(stderr, "prima serve: %s\n", st.message().c_str());
    return kExitBadInput;
  }
  auto sc = scenario::load_scenario(o.scenario_path, o.sets);
  if (!sc.ok()) {
    std::fprintf(stderr, "prima serve: %s\n", sc.status().message().c_str());
    return kExitBadInput;
  }
  auto built = sim::build_sim_cluster(*sc);
  if (!built.ok()) {
    std::fprintf(stderr, "prima serve: %s\n", built.status().message().c_str());
    return kExitBadInput;
  }
  sim::SimCluster& cl = **built;
  // No report is written: keep the newest 10,000 request records and an hour of timeline rows
  // (totals stay exact), so a server running for days does not grow (docs/serving.md).
  cl.recorder->set_retention(10000, 3600);
  cl.engine->start();
  if (cl.injector) cl.injector->start();
  sim::Emulator emu(cl.platform.get(), cl.rt.get(), eo);
  server::EngineBridge bridge(cl.engine.get(), cl.rt.get(), [&](std::function<void()> fn) {
    cl.rt->post(std::move(fn));
    emu.wake();
  });
  server::ModelInfo model;
  model.name = sc->model.name;
  model.max_model_len = sc->max_model_len > 0 ? sc->max_model_len : sc->model.max_context;
  server::ServerMetrics metrics(model.name, model.max_model_len);
  bridge.set_metrics(&metrics, cl.recorder.get(), sc->plan.gpus_per_replica() * sc->plan.replicas);
  const nlohmann::json limits = engine_limits(*cl.engine);
  const std::string banner =
      fmt::format("{} ({}) on {}, TP{} x PP{} x {} replica(s), simulated at {}x; {}", model.name,
                  sc->name, sc->topology.name, sc->plan.tensor_parallel, sc->plan.pipeline_parallel,
                  sc->plan.replicas, eo.speed, describe_limits(limits));
  ServeLoop loop;
  loop.run = [&](const std::function<void()>& publish) { emu.run(publish); };
  loop.stop = [&] { emu.stop(); };
  return run_server(o, &bridge, &metrics, model, banner, loop, [&](nlohmann::json* j) {
    (*j)["sim_time_s"] = emu.sim_time_now();
    (*j)["speed"] = eo.speed;
    (*j)["sim_lag_ms"] = emu.lag_wall_s() * 1e3;
    (*j)["limits"] = limits;
  });
}

}  // namespace

int cmd_serve(const Args& args) {
  po::options_description opts("prima serve [options]");
  ServeOptions o;
  server::ServerOptions& so = o.http;
  opts.add_options()("help,h", "show this help")(
      "backend", po::value<std::string>(&o.backend)->default_value("sim"),
      "sim: the scenario's simulated cluster paced to the wall clock; real: a GGUF model on "
      "this machine's CPU (--model)")(
      "host", po::value<std::string>(&so.host)->default_value("127.0.0.1"), "address to listen on")(
      "port", po::value<int>(&so.port)->default_value(8000), "TCP port (0: any free port)")(
      "port-file", po::value<std::string>(&o.port_file),
      "write the port listened on to this file once ready")(
      "api-key", po::value<std::string>(&so.api_key),
      "require 'Authorization: Bearer KEY' (default: $PRIMA_API_KEY; none when unset)")(
      "max-concurrent", po::value<int>(&so.max_concurrent)->default_value(256),
      "generation requests in progress at once; more get 429 with Retry-After")(
      "max-body-bytes", po::value<std::size_t>(&so.max_body_bytes)->default_value(1 << 20),
      "largest request body, chunked or not; larger ones get 413")(
      "max-header-bytes", po::value<std::size_t>(&so.max_header_bytes)->default_value(32768),
      "largest request line + headers; larger ones get 431")(
      "max-connections", po::value<int>(&so.max_connections)->default_value(10000),
      "open connections at most (bounded by the open-file limit); more get 503 at once")(
      "header-timeout", po::value<double>(&so.header_timeout_s)->default_value(10.0),
      "seconds from a request's first byte to the end of its headers; later: 408")(
      "body-timeout", po::value<double>(&so.body_timeout_s)->default_value(30.0),
      "seconds from the end of the headers to the end of the body; later: 408")(
      "idle-timeout", po::value<double>(&so.idle_timeout_s)->default_value(5.0),
      "seconds a connection may wait for its next request (keep-alive)")(
      "default-max-tokens", po::value<int>(&so.default_max_tokens)->default_value(16),
      "output tokens of a request that does not say")(
      "max-tokens", po::value<int>(&so.max_tokens_cap)->default_value(0),
      "largest max_tokens accepted (0: the model's context length)")(
      "threads", po::value<int>(&so.threads)->default_value(0),
      "HTTP worker threads (0: max-concurrent + 16)")(
      "drain-timeout", po::value<double>(&o.drain_timeout_s)->default_value(30.0),
      "on SIGTERM, seconds to let requests in progress finish");
  po::options_description sim_opts("--backend sim");
  sim_opts.add_options()("scenario", po::value<std::string>(&o.scenario_path),
                         "scenario file (model and cluster to serve); default: the built-in one")(
      "set", po::value<std::vector<std::string>>(&o.sets)->composing(),
      "override a scenario field: PATH=VALUE (repeatable)")(
      "speed", po::value<double>(&o.speed)->default_value(1.0),
      "simulated seconds per wall-clock second (20: twenty times faster)");
  po::options_description real_opts("--backend real");
  real_opts.add_options()("model", po::value<std::string>(&o.model_path),
                          "GGUF model file (e.g. models/SmolLM2-135M-Instruct.Q4_1.gguf)")(
      "manifest", po::value<std::string>(&o.manifest),
      "sha256 manifest to verify the model file against")(
      "served-model-name", po::value<std::string>(&o.served_name),
      "the model name clients send (default: the file name without .gguf)")(
      "tp", po::value<int>(&o.tp)->default_value(1),
      "tensor-parallel ranks (run under mpirun -np TP*PP)")(
      "pp", po::value<int>(&o.pp)->default_value(1), "pipeline-parallel ranks")(
      "kernel-threads", po::value<int>(&o.kernel_threads)->default_value(0),
      "CPU threads per rank for the kernels (0: all cores)")(
      "max-num-seqs", po::value<int>(&o.max_num_seqs)->default_value(8),
      "sequences batched together at most (the KV cache holds this many full contexts)")(
      "max-model-len", po::value<int>(&o.max_model_len)->default_value(0),
      "context length served, prompt + output (0: the model's)")(
      "repack", po::bool_switch(&o.repack),
      "pack the Q4_1/Q8_0 weights into 16-row panels for the AVX-512 VNNI kernels (the default "
      "where the CPU has them; else a note and the GGUF layout): the same results as the GGUF "
      "layout (llama.cpp's operations, bit for bit), about 1.5x the decode tokens per second, "
      "+21 MiB peak memory for SmolLM2")(
      "no-repack", po::bool_switch(&o.no_repack),
      "keep the weights in the GGUF layout (no packed copy: less memory, the kernels llama.cpp's "
      "CPU build runs; the same results)");
  po::options_description all;
  all.add(opts).add(sim_opts).add(real_opts);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "prima serve: %s (see prima serve --help)\n", e.what());
    return kExitBadInput;
  }
  if (vm.count("help")) {
    std::cout << all << R"(
Serves OpenAI (/v1/completions, /v1/chat/completions, /v1/models), TGI (/generate,
/generate_stream) and KServe v2 (/v2/health/*, /v2/models/{m}, /v2/models/{m}/infer) over
HTTP, plus GET /health and Prometheus metrics on /metrics. See docs/serving.md.

examples:
  prima serve --backend sim                       # the built-in scenario's model and cluster
  prima serve --backend sim --scenario my.json --port 9000 --speed 20
  PRIMA_API_KEY=secret prima serve --backend sim
  prima serve --backend real --model models/SmolLM2-135M-Instruct.Q4_1.gguf --max-model-len 2048
  mpirun -np 2 prima serve --backend real --model M.gguf --tp 2   # rank 0 serves HTTP

Exit codes: 0 ok (also after a SIGTERM drain), 1 failure, 2 bad input.
)";
    return kExitOk;
  }
  if (o.backend != "sim" && o.backend != "real") {
    std::fprintf(stderr, "prima serve: --backend %s: must be 'sim' or 'real'\n", o.backend.c_str());
    return kExitBadInput;
  }
  const bool real = o.backend == "real";
  for (const char* f : {"scenario", "set"})
    if (real && vm.count(f)) {
      std::fprintf(stderr, "prima serve: --%s applies to --backend sim only\n", f);
      return kExitBadInput;
    }
  if (real && !vm["speed"].defaulted()) {
    std::fprintf(stderr, "prima serve: --speed applies to --backend sim only\n");
    return kExitBadInput;
  }
  for (const char* f : {"model", "manifest", "served-model-name", "kernel-threads", "tp", "pp",
                        "max-num-seqs", "max-model-len", "repack", "no-repack"})
    if (!real && vm.count(f) && !vm[f].defaulted()) {
      std::fprintf(stderr, "prima serve: --%s applies to --backend real only\n", f);
      return kExitBadInput;
    }
  if (o.repack && o.no_repack) {
    std::fprintf(stderr, "prima serve: --repack and --no-repack exclude each other\n");
    return kExitBadInput;
  }
  if (real && o.model_path.empty()) {
    std::fprintf(stderr, "prima serve: --backend real needs --model FILE.gguf\n");
    return kExitBadInput;
  }
  if (so.api_key.empty())
    if (const char* k = std::getenv("PRIMA_API_KEY")) so.api_key = k;
  if (!(o.drain_timeout_s >= 0)) {
    std::fprintf(stderr, "prima serve: --drain-timeout: %g must be >= 0\n", o.drain_timeout_s);
    return kExitBadInput;
  }
  if (Status st = so.validate(); !st.ok()) {
    std::fprintf(stderr, "prima serve: %s\n", st.message().c_str());
    return kExitBadInput;
  }

  // A client that goes away must not kill the server: writes to its socket fail instead.
  std::signal(SIGPIPE, SIG_IGN);
  // Signals go to run_server's signal thread only: blocked here, before any thread starts
  // (the real backend starts its worker and communication threads while it loads).
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  return real ? serve_real(o) : serve_sim(o);
}

}  // namespace prima::cli
