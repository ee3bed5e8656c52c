// run_server(): the part of `prima serve` both backends share (see serve.h): the HTTP
// server's thread, the port file, the signal thread and the SIGTERM drain.
#include <fmt/format.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/commands.h"
#include "cli/serve.h"

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

nlohmann::json engine_limits(const cluster::ServingEngine& e) {
  const auto& so = e.options().scheduler;
  std::int64_t kv_blocks = 0;
  for (const auto& r : e.replicas()) kv_blocks += r->kv().num_blocks();
  return {{"max_num_seqs", so.max_num_seqs}, {"max_num_batched_tokens", so.max_num_batched_tokens},
          {"block_size", so.block_size},     {"max_model_len", e.options().max_model_len},
          {"kv_blocks", kv_blocks},          {"replicas", e.replicas().size()}};
}

std::string describe_limits(const nlohmann::json& l) {
  return fmt::format("max-num-seqs {}, max-num-batched-tokens {}, {} KV blocks of {} tokens",
                     l["max_num_seqs"].get<int>(), l["max_num_batched_tokens"].get<int>(),
                     l["kv_blocks"].get<std::int64_t>(), l["block_size"].get<int>());
}

int run_server(const ServeOptions& o, server::EngineBridge* bridge, server::ServerMetrics* metrics,
               const server::ModelInfo& model, const std::string& banner, ServeLoop loop,
               std::function<void(nlohmann::json*)> health_extra) {
  server::HttpServer http(o.http, bridge, model, o.backend, metrics);
  http.health_extra = std::move(health_extra);
  if (Status st = http.bind(); !st.ok()) {
    std::fprintf(stderr, "prima serve: %s\n", st.message().c_str());
    return kExitFailure;
  }
  if (!o.port_file.empty())
    if (Status st = write_port_file(o.port_file, http.port()); !st.ok()) {
      std::fprintf(stderr, "prima serve: %s\n", st.message().c_str());
      return kExitBadInput;
    }
  std::fprintf(stderr, "prima serve: %s; listening on http://%s:%d\n", banner.c_str(),
               o.http.host.c_str(), http.port());

  sigset_t sigs;  // blocked by cmd_serve before any thread started
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  std::thread http_thread([&] { http.serve(); });
  std::atomic<bool> done{false}, failed{false};
  std::string failure;  // written on the loop before `failed` is set
  std::thread signal_thread([&] {
    const timespec poll{0, 100 * 1000 * 1000};
    int sig = -1;
    while (!done && !failed && (sig = sigtimedwait(&sigs, nullptr, &poll)) < 0) {
    }
    if (!failed && sig < 0) return;  // shutting down for another reason
    http.start_draining();
    if (failed) {
      std::fprintf(stderr,
                   "prima serve: the backend cannot serve again (%s): failing %lld requests in "
                   "progress and exiting\n",
                   failure.c_str(), static_cast<long long>(bridge->open()));
      bridge->fail_all("the backend failed: " + failure);
      http.wait_drained(5.0);
    } else {
      std::fprintf(stderr, "prima serve: %s: draining (%lld requests in progress, at most %g s)\n",
                   sig == SIGTERM ? "SIGTERM" : "SIGINT", static_cast<long long>(bridge->open()),
                   o.drain_timeout_s);
      if (!http.wait_drained(o.drain_timeout_s)) {
        std::fprintf(stderr,
                     "prima serve: drain timeout: failing %lld requests still in progress\n",
                     static_cast<long long>(bridge->open()));
        bridge->fail_all("the server shut down (drain timeout)");
        http.wait_drained(5.0);
      }
    }
    http.stop();
    loop.stop();
  });

  loop.run([&] {
    bridge->publish();
    if (loop.fatal && !failed)
      if (Status st = loop.fatal(); !st.ok()) {
        failure = st.message();
        failed = true;
      }
  });

  done = true;
  http.stop();
  http_thread.join();
  signal_thread.join();
  std::fprintf(stderr, "prima serve: stopped (%lld requests served)\n",
               static_cast<long long>(bridge->snapshot().ended));
  return failed ? kExitFailure : kExitOk;
}

}  // namespace prima::cli
