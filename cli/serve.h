// `prima serve`'s pieces shared by its two backends (cmd_serve.cpp parses the flags):
//  - ServeOptions: every flag, parsed;
//  - run_server(): the part common to both backends — binds the HTTP server, writes the port
//    file, runs the server on its thread and the engine's loop on the calling thread, and
//    drains on SIGTERM/SIGINT (new requests 503, requests in progress finish, at most
//    drain_timeout_s; then they fail) before it returns;
//  - serve_sim() (cmd_serve.cpp) and serve_real() (serve_real.cpp): build the engine and
//    its loop for each backend, then call run_server().
// Threads: the caller's thread runs the engine's loop; one thread runs the HTTP server (and
// its worker pool); one waits for signals (blocked in every other thread).
#pragma once

#include <functional>
#include <string>

#include "server/engine_bridge.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/request_parse.h"

namespace prima::cli {

struct ServeOptions {
  server::ServerOptions http;
  std::string backend = "sim";
  std::string port_file;
  double drain_timeout_s = 30;
  // sim
  std::string scenario_path;
  std::vector<std::string> sets;
  double speed = 1.0;
  // real
  std::string model_path, manifest, served_name;
  int tp = 1, pp = 1;
  int kernel_threads = 0;
  int max_num_seqs = 8;
  int max_model_len = 0;
  bool repack = false;     // --repack given (packing is the default where the CPU has the kernels)
  bool no_repack = false;  // --no-repack: the GGUF layout
};

// The engine's loop as run_server() drives it: run(publish) runs it on the calling thread
// until stop(), calling publish() on the loop at least every few milliseconds.
struct ServeLoop {
  std::function<void(const std::function<void()>& publish)> run;
  std::function<void()> stop;  // any thread
};

// The limits the engine serves with (/health's "limits", the startup banner):
// max_num_seqs, max_num_batched_tokens, block_size, max_model_len, kv_blocks (all replicas),
// replicas.
nlohmann::json engine_limits(const cluster::ServingEngine& e);
std::string describe_limits(const nlohmann::json& limits);

// Serves until a signal (then drains) or a failure. Returns the exit code.
int run_server(const ServeOptions& o, server::EngineBridge* bridge, server::ServerMetrics* metrics,
               const server::ModelInfo& model, const std::string& banner, ServeLoop loop,
               std::function<void(nlohmann::json*)> health_extra);

int serve_real(const ServeOptions& o);

}  // namespace prima::cli
