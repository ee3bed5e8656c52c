// `prima serve --backend sim|real ...`: serves the OpenAI, TGI and KServe v2 APIs over HTTP
// (server/) in front of the engine one backend assembles: the scenario's simulated cluster
// paced to the wall clock (serve_sim.cpp), or a GGUF model on this machine's CPU
// (serve_real.cpp; TP/PP ranks under mpirun). This file parses and checks the flags
// (serve_options.h), blocks the signals run_server() waits for, and calls the backend's
// server; serve_http.cpp holds what both share (HTTP thread, signals, draining).
#include <pthread.h>

#include <boost/program_options.hpp>
#include <csignal>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/serve.h"
#include "cli/serve_options.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

constexpr const char* kHelp = R"(
Serves OpenAI (/v1/completions, /v1/chat/completions, /v1/models), TGI (/generate,
/generate_stream) and KServe v2 (/v2/health/*, /v2/models/{m}, /v2/models/{m}/infer) over
HTTP, plus GET /health and Prometheus metrics on /metrics. See docs/serving.md.

examples:
  prima serve --backend sim                       # the built-in scenario's model and cluster
  prima serve --backend sim --scenario my.json --port 9000 --speed 20
  PRIMA_API_KEY=secret prima serve --backend sim
  prima serve --backend real --model models/SmolLM2-135M-Instruct.Q4_1.gguf --max-model-len 2048
  mpirun -np 2 prima serve --backend real --model M.gguf --tp 2   # rank 0 serves HTTP
  prima serve --backend real --model M.gguf --device cuda:0   # exit 2 for now: no CUDA
                                                              # forward pass yet (says why)

Exit codes: 0 ok (also after a SIGTERM drain), 1 failure, 2 bad input.
)";

// A client that goes away must not kill the server: writes to its socket fail instead.
// SIGTERM and SIGINT go to run_server's signal thread only: blocked here, before any thread
// starts (the real backend starts its worker and communication threads while it loads).
void prepare_signals() {
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
}

}  // namespace

int cmd_serve(const Args& args) {
  po::variables_map vm;
  if (auto done = parse_command_line({"prima serve", serve_flags(), {}, {}, kHelp}, args, &vm))
    return *done;
  const ServeOptions o = serve_options(vm);
  if (Status st = o.validate(); !st.ok()) return fail_with("prima serve", st);
  prepare_signals();
  return o.backend == "real" ? serve_real(o) : serve_sim(o);
}

}  // namespace prima::cli
