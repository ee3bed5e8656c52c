// The options of `prima serve` (cli/cmd_serve.cpp): its flags as one struct with their
// defaults, filled from the parsed command line by serve_options() and checked by validate()
// (a Status whose message names the flag and its bad value). The flags come in three groups:
// the HTTP server's and the drain's (both backends), --backend sim's and --backend real's; a
// flag of one backend given with the other is an error. Checks that need files (the scenario,
// the model) are the backends'. Plain values; thread-compatible.
#pragma once

#include <boost/program_options.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli/device_options.h"
#include "engine/core/status.h"
#include "server/http_server.h"

namespace prima::cli {

struct ServeOptions {
  server::ServerOptions http;  // api_key: --api-key, else $PRIMA_API_KEY
  std::string backend = "sim";
  std::string port_file;
  double drain_timeout_s = 30;
  // sim
  std::string scenario_path;
  std::vector<std::string> sets;
  double speed = 1.0;
  // real
  std::string model_path, manifest;
  std::vector<std::string> served_names;  // --served-model-name (empty: the default name)
  int tp = 1, pp = 1;
  int replicas = 1;             // --replicas: replicas of tp x pp ranks in the mpirun job
  double comm_timeout_s = 300;  // --comm-timeout
  int kernel_threads = 0;
  int max_num_seqs = 8;
  int max_num_batched_tokens = 0;  // 0: the scheduler's default
  int max_model_len = 0;
  bool repack = false;     // --repack given (packing is the default where the CPU has the kernels)
  bool no_repack = false;  // --no-repack: the GGUF layout
  DeviceOptions device;    // --device cpu|cuda[:N]
  std::string synthetic;   // --synthetic NAME[:TYPE] instead of --model (real)
  // The flags given on the command line (without the "--"; a default is not "given"): each
  // must apply to the backend chosen.
  std::set<std::string> given;

  Status validate() const;
};

// The flags, their defaults and help text, in their three groups (all three in one).
boost::program_options::options_description serve_flags();
// The options the parsed flags give (not validated).
ServeOptions serve_options(const boost::program_options::variables_map& vm);

// --served-model-name: the first name replaces model->name (the default name), the rest
// become its aliases.
void apply_served_names(const ServeOptions& o, server::ModelInfo* model);

}  // namespace prima::cli
