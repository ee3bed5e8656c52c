// `prima serve`'s pieces shared by its two backends (cmd_serve.cpp parses the flags into
// ServeOptions, cli/serve_options.h):
//  - run_server(): the part common to both backends — binds the HTTP server, writes the port
//    file, runs the server on its thread and the engine's loop on the calling thread, and
//    drains on SIGTERM/SIGINT (new requests 503, requests in progress finish, at most
//    drain_timeout_s; then they fail) before it returns;
//  - serve_sim() (serve_sim.cpp) and serve_real() (serve_real.cpp): take the engine each
//    backend assembles (sim::SimCluster, real::RealCluster), put the HTTP bridge and the loop
//    around it, then call run_server().
// Threads: the caller's thread runs the engine's loop; one thread runs the HTTP server (and
// its worker pool); one waits for signals (blocked in every other thread).
#pragma once

#include <functional>
#include <string>

#include "cli/serve_options.h"
#include "server/engine_bridge.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/request_parse.h"

namespace prima::cli {

// The engine's loop as run_server() drives it: run(publish) runs it on the calling thread
// until stop(), calling publish() on the loop at least every few milliseconds.
struct ServeLoop {
  std::function<void(const std::function<void()>& publish)> run;
  std::function<void()> stop;  // any thread
  // Checked on the loop after each publish (may be empty): not ok when the backend cannot
  // serve again (a real replica whose rank stopped answering). The server then fails the
  // requests in progress with the reason and exits with 1, so that whoever launched it
  // (mpirun, a Kubernetes group) restarts the job.
  std::function<Status()> fatal;
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

// Each backend's server, on validated options; the exit code.
int serve_sim(const ServeOptions& o);
int serve_real(const ServeOptions& o);

}  // namespace prima::cli
