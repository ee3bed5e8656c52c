// The options of `prima bench` (cli/cmd_bench.cpp): its flags as one struct with their
// defaults (std::nullopt: a flag without a default that was not given), filled from the
// parsed command line by bench_options(), checked by validate() (a Status whose message names
// the flag and its bad value), and turned into the load generator's options (loadgen/).
// Values with units (durations, rates) and the extra JSON body stay the text given until
// validate() has checked them; the conversions assume validated options. Checks that need files or
// the network (a scenario, a dataset, the server) are the command's. Plain values;
// thread-compatible.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "loadgen/client.h"
#include "loadgen/schedule.h"
#include "loadgen/stats.h"

namespace prima::cli {

struct BenchOptions {
  // Where and how to send.
  std::string url = "http://127.0.0.1:8000";  // --url, --base-url
  std::string endpoint = "completions";       // completions | chat | tgi
  std::optional<std::string> model;           // else the server's (GET /v1/models)
  bool stream_flag = false, no_stream = false;
  bool keep_alive = true;  // --no-keep-alive: false
  bool ignore_eos = false;
  std::optional<double> temperature, top_p;  // sent in every request when given
  std::optional<int> top_k;
  std::optional<std::string> extra_body;  // a JSON object merged into every body
  std::string api_key;                    // --api-key, else $PRIMA_API_KEY
  std::string timeout = "600s";

  // What to send.
  std::optional<std::string> request_rate;  // --request-rate, --rate: requests/s or "inf"
  std::string arrival = "poisson";
  double burstiness = 1.0;
  std::optional<int> concurrency, max_concurrency;
  std::optional<long long> num_prompts;
  std::optional<std::string> duration;       // else no time limit
  std::optional<int> input_len, output_len;  // --random-input-len, --random-output-len
  double range_ratio = 0.0;                  // --random-range-ratio
  std::optional<std::string> dataset_path;   // --dataset-path, --dataset
  std::optional<std::string> trace;
  std::string trace_format = "azure";
  double time_scale = 1.0;
  std::optional<std::string> scenario;
  std::vector<std::string> sets;                           // --set PATH=VALUE (with --scenario)
  std::optional<std::string> slo_ttft, slo_tpot, slo_e2e;  // durations with a unit
  std::optional<unsigned long long> seed;

  // What to write.
  std::optional<std::string> out, save_requests;
  bool json = false, quiet = false;

  Status validate() const;

  // Of validated options:
  bool streaming() const { return !no_stream; }
  // Where and how to send (the model is the command's: it may ask the server).
  loadgen::ClientOptions client() const;
  // The schedule, with the defaults that depend on other flags (256 in flight at rate inf,
  // 1000 requests when nothing else bounds the run).
  loadgen::ScheduleOptions schedule() const;
  // `base` (a scenario's SLO, or none) with the --slo-* flags given.
  loadgen::SloBounds slo(loadgen::SloBounds base) const;
};

// The flags, their defaults and help text.
boost::program_options::options_description bench_flags();
// The options the parsed flags give (not validated).
BenchOptions bench_options(const boost::program_options::variables_map& vm);

}  // namespace prima::cli
