// `prima generate`'s flags and their checks (see generate_options.h).
#include "cli/generate_options.h"

#include <fmt/format.h>

#include "cli/flags.h"
#include "cli/synthetic_option.h"

namespace po = boost::program_options;

namespace prima::cli {

Status GenerateOptions::validate() const {
  if ((backend.model_path.empty() && synthetic.empty()) || (!prompt && prompt_file.empty()))
    return invalid_argument("--model (or --synthetic) and --prompt are required (see --help)");
  PRIMA_RETURN_IF_ERROR(check_model_source(backend.model_path, synthetic));
  PRIMA_RETURN_IF_ERROR(device.check_parallelism(backend.tp, backend.pp));
  if (max_tokens < 1)
    return invalid_argument(fmt::format("--max-tokens must be >= 1, got {}", max_tokens));
  if (!(temperature >= 0))
    return invalid_argument(fmt::format("--temperature must be >= 0, got {}", temperature));
  if (top_k < 0) return invalid_argument(fmt::format("--top-k must be >= 0, got {}", top_k));
  if (!(top_p > 0 && top_p <= 1))
    return invalid_argument(fmt::format("--top-p must be > 0 and <= 1, got {}", top_p));
  if (batch < 1 || batch > 256)
    return invalid_argument(fmt::format("--batch must be from 1 to 256, got {}", batch));
  for (const auto& s : stops)
    if (s.empty()) return invalid_argument("--stop needs a non-empty string");
  if (repack && no_repack) return invalid_argument("--repack and --no-repack exclude each other");
  if (!(backend.comm_timeout_s > 0))
    return invalid_argument(
        fmt::format("--comm-timeout must be > 0, got {:g}", backend.comm_timeout_s));
  return device.validate();
}

po::options_description generate_flags() {
  po::options_description opts("prima generate --model PATH --prompt TEXT [options]");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("model", po::value<std::string>(), "GGUF model file (llama architecture)")
      ("prompt", po::value<std::string>(), "the prompt text")
      ("prompt-file", po::value<std::string>(), "read the prompt text from this file")
      ("chat", "apply the model's chat template to the prompt as a user message")
      ("max-tokens", po::value<int>()->default_value(64), "tokens to generate at most")
      ("temperature", po::value<double>()->default_value(0.0), "0: greedy")
      ("top-k", po::value<int>()->default_value(0), "0: no top-k cut")
      ("top-p", po::value<double>()->default_value(1.0), "1: no nucleus cut")
      ("seed", po::value<std::uint64_t>()->default_value(0), "sampling seed")
      ("threads", po::value<int>()->default_value(0), "kernel threads per rank (0: all cores)")
      ("tp", po::value<int>()->default_value(1), "tensor-parallel ranks")
      ("pp", po::value<int>()->default_value(1), "pipeline stages")
      ("comm-timeout", po::value<double>()->default_value(300),
       "seconds a rank waits for another before the run fails")
      ("ids", "print the generated token ids instead of the text")
      ("ignore-eos", "do not stop at end-of-generation tokens (benchmarks)")
      ("batch", po::value<int>()->default_value(1),
       "run N copies of the request at once (seeds seed..seed+N-1); prints the first, reports "
       "the aggregate throughput")
      ("stop", po::value<std::vector<std::string>>()->composing(), "stop string (repeatable)")
      ("manifest", po::value<std::string>(), "sha256 manifest to verify the model against")
      ("repack",
       "pack the Q4_1/Q8_0 weights into 16-row panels for the AVX-512 VNNI kernels (the default "
       "where the CPU has them; else a note and the GGUF layout): the same results as the GGUF "
       "layout (llama.cpp's operations, bit for bit), about 1.5x the decode tokens per second, "
       "+21 MiB peak memory for SmolLM2")
      ("no-repack",
       "keep the weights in the GGUF layout (no packed copy: less memory, the kernels llama.cpp's "
       "CPU build runs; the same results)");
  // clang-format on
  add_device_flag(opts);
  add_synthetic_flag(opts);
  return opts;
}

GenerateOptions generate_options(const po::variables_map& vm) {
  GenerateOptions o;
  get_flag(vm, {"model"}, &o.backend.model_path);
  get_flag(vm, {"prompt"}, &o.prompt);
  get_flag(vm, {"prompt-file"}, &o.prompt_file);
  get_flag(vm, {"manifest"}, &o.backend.manifest);
  o.chat = vm.count("chat") > 0;
  get_flag(vm, {"max-tokens"}, &o.max_tokens);
  get_flag(vm, {"temperature"}, &o.temperature);
  get_flag(vm, {"top-k"}, &o.top_k);
  get_flag(vm, {"top-p"}, &o.top_p);
  get_flag(vm, {"seed"}, &o.seed);
  get_flag(vm, {"threads"}, &o.backend.threads);
  get_flag(vm, {"tp"}, &o.backend.tp);
  get_flag(vm, {"pp"}, &o.backend.pp);
  get_flag(vm, {"comm-timeout"}, &o.backend.comm_timeout_s);
  o.print_ids = vm.count("ids") > 0;
  o.ignore_eos = vm.count("ignore-eos") > 0;
  get_flag(vm, {"batch"}, &o.batch);
  get_flag(vm, {"stop"}, &o.stops);
  o.repack = vm.count("repack") > 0;
  o.no_repack = vm.count("no-repack") > 0;
  o.device = device_options(vm);
  o.synthetic = synthetic_flag(vm);
  return o;
}

}  // namespace prima::cli
