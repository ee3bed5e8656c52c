// `prima serve --backend sim [--scenario FILE] [--host H] [--port P] [--speed X] ...`: serves
// the OpenAI, TGI and KServe v2 APIs over HTTP (server/). With --backend sim the scenario's
// cluster (the built-in default without --scenario) runs in the simulator paced to the wall
// clock (backends/sim/emulator.h): only HTTP requests arrive (the scenario's workload is not
// generated) and tokens are released at their simulated times, `--speed` times faster than
// real time. SIGTERM/SIGINT drain: new requests get 503, requests in progress finish (at most
// --drain-timeout seconds; then they fail), and the process exits 0.
//
// Threads: the main thread builds the cluster and runs the emulator loop (the engine's
// thread); one thread runs the HTTP server (and its worker pool); one waits for signals.
#include <fmt/format.h>
#include <pthread.h>

#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "backends/sim/emulator.h"
#include "backends/sim/sim_cluster.h"
#include "cli/commands.h"
#include "engine/config/scenario.h"
#include "server/engine_bridge.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

Status write_port_file(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) return invalid_argument("--port-file " + path + ": cannot write");
    f << port << "\n";
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return invalid_argument("--port-file " + path + ": " + ec.message());
  return ok_status();
}

}  // namespace

int cmd_serve(const Args& args) {
  po::options_description opts("prima serve [options]");
  server::ServerOptions so;
  sim::EmulatorOptions eo;
  std::string backend = "sim", scenario_path, port_file;
  double drain_timeout_s = 30;
  opts.add_options()("help,h", "show this help")(
      "backend", po::value<std::string>(&backend)->default_value("sim"),
      "sim: the scenario's simulated cluster paced to the wall clock")(
      "scenario", po::value<std::string>(&scenario_path),
      "scenario file (model and cluster to serve); default: the built-in one")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a scenario field: PATH=VALUE (repeatable)")(
      "host", po::value<std::string>(&so.host)->default_value("127.0.0.1"), "address to listen on")(
      "port", po::value<int>(&so.port)->default_value(8000), "TCP port (0: any free port)")(
      "port-file", po::value<std::string>(&port_file),
      "write the port listened on to this file once ready")(
      "speed", po::value<double>(&eo.speed)->default_value(1.0),
      "sim: simulated seconds per wall-clock second (20: twenty times faster)")(
      "api-key", po::value<std::string>(&so.api_key),
      "require 'Authorization: Bearer KEY' (default: $PRIMA_API_KEY; none when unset)")(
      "max-concurrent", po::value<int>(&so.max_concurrent)->default_value(256),
      "generation requests in progress at once; more get 429 with Retry-After")(
      "max-body-bytes", po::value<std::size_t>(&so.max_body_bytes)->default_value(1 << 20),
      "largest request body; larger ones get 413")(
      "default-max-tokens", po::value<int>(&so.default_max_tokens)->default_value(16),
      "output tokens of a request that does not say")(
      "max-tokens", po::value<int>(&so.max_tokens_cap)->default_value(0),
      "largest max_tokens accepted (0: the model's context length)")(
      "threads", po::value<int>(&so.threads)->default_value(0),
      "HTTP worker threads (0: max-concurrent + 16)")(
      "drain-timeout", po::value<double>(&drain_timeout_s)->default_value(30.0),
      "on SIGTERM, seconds to let requests in progress finish");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "prima serve: %s (see prima serve --help)\n", e.what());
    return kExitBadInput;
  }
  if (vm.count("help")) {
    std::cout << opts << R"(
Serves OpenAI (/v1/completions, /v1/chat/completions, /v1/models), TGI (/generate,
/generate_stream) and KServe v2 (/v2/health/*, /v2/models/{m}, /v2/models/{m}/infer) over
HTTP, plus GET /health. See docs/serving.md.

examples:
  prima serve --backend sim                       # the built-in scenario's model and cluster
  prima serve --backend sim --scenario my.json --port 9000 --speed 20
  PRIMA_API_KEY=secret prima serve --backend sim

Exit codes: 0 ok (also after a SIGTERM drain), 1 failure, 2 bad input.
)";
    return kExitOk;
  }
  if (backend != "sim") {
    std::fprintf(stderr,
                 "prima serve: --backend %s: only 'sim' is served so far (the real CPU backend "
                 "is not wired to the server yet)\n",
                 backend.c_str());
    return kExitBadInput;
  }
  if (so.api_key.empty())
    if (const char* k = std::getenv("PRIMA_API_KEY")) so.api_key = k;
  if (!(drain_timeout_s >= 0)) {
    std::fprintf(stderr, "prima serve: --drain-timeout: %g must be >= 0\n", drain_timeout_s);
    return kExitBadInput;
  }
  for (Status st : {so.validate(), eo.validate()})
    if (!st.ok()) {
      std::fprintf(stderr, "prima serve: %s\n", st.message().c_str());
      return kExitBadInput;
    }
  std::vector<std::string> sets;
  if (vm.count("set")) sets = vm["set"].as<std::vector<std::string>>();
  auto sc = config::load_scenario(scenario_path, sets);
  if (!sc.ok()) {
    std::fprintf(stderr, "prima serve: %s\n", sc.status().message().c_str());
    return kExitBadInput;
  }

  // A client that goes away must not kill the server: writes to its socket fail instead.
  std::signal(SIGPIPE, SIG_IGN);
  // Signals go to the signal thread only (blocked here, before any thread starts).
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

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
  server::ServerMetrics metrics(sc->model.name);
  bridge.set_metrics(&metrics, cl.recorder.get(), sc->plan.gpus_per_replica() * sc->plan.replicas);
  server::ModelInfo model;
  model.name = sc->model.name;
  model.max_model_len = sc->max_model_len > 0 ? sc->max_model_len : sc->model.max_context;
  model.created = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  server::HttpServer http(so, &bridge, model, "sim", &metrics);
  http.health_extra = [&](nlohmann::json* j) {
    (*j)["sim_time_s"] = emu.sim_time_now();
    (*j)["speed"] = eo.speed;
    (*j)["sim_lag_ms"] = emu.lag_wall_s() * 1e3;
  };
  if (Status st = http.bind(); !st.ok()) {
    std::fprintf(stderr, "prima serve: %s\n", st.message().c_str());
    return kExitFailure;
  }
  if (!port_file.empty())
    if (Status st = write_port_file(port_file, http.port()); !st.ok()) {
      std::fprintf(stderr, "prima serve: %s\n", st.message().c_str());
      return kExitBadInput;
    }
  std::fprintf(stderr,
               "prima serve: %s (%s) on %s, TP%d x PP%d x %d replica(s), simulated at %gx; "
               "listening on http://%s:%d\n",
               model.name.c_str(), sc->name.c_str(), sc->topology.name.c_str(),
               sc->plan.tensor_parallel, sc->plan.pipeline_parallel, sc->plan.replicas, eo.speed,
               so.host.c_str(), http.port());

  std::thread http_thread([&] { http.serve(); });
  std::atomic<bool> done{false};
  std::thread signal_thread([&] {
    const timespec poll{0, 100 * 1000 * 1000};
    int sig = -1;
    while (!done && (sig = sigtimedwait(&sigs, nullptr, &poll)) < 0) {
    }
    if (sig < 0) return;  // shutting down for another reason
    std::fprintf(stderr, "prima serve: %s: draining (%lld requests in progress, at most %g s)\n",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT", static_cast<long long>(bridge.open()),
                 drain_timeout_s);
    http.start_draining();
    if (!http.wait_drained(drain_timeout_s)) {
      std::fprintf(stderr, "prima serve: drain timeout: failing %lld requests still in progress\n",
                   static_cast<long long>(bridge.open()));
      bridge.fail_all("the server shut down (drain timeout)");
      http.wait_drained(5.0);
    }
    http.stop();
    emu.stop();
  });

  emu.run([&] { bridge.publish(); });

  done = true;
  http.stop();
  http_thread.join();
  signal_thread.join();
  std::fprintf(stderr, "prima serve: stopped (%lld requests served)\n",
               static_cast<long long>(bridge.snapshot().ended));
  return kExitOk;
}

}  // namespace prima::cli
