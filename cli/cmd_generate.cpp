// `prima generate`: runs one prompt through the engine on the real backend (a GGUF model on
// CPU; TP x PP ranks under mpirun) and streams the completion to stdout. The engine is the
// same as in simulation (ServingEngine, one replica, its scheduler and KV block manager) on
// a WallRuntime; ranks != 0 execute the leader's steps. Single-threaded apart from the
// backend's worker thread and the runtime's post().
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backends/real/real_backend.h"
#include "backends/real/tokenizer.h"
#include "cli/commands.h"
#include "engine/cluster/serving_engine.h"
#include "engine/metrics/recorder.h"
#include "engine/wall_runtime.h"

namespace po = boost::program_options;

namespace prima::cli {

namespace {

int exit_for(const Status& st) {
  return st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kNotFound
             ? kExitBadInput
             : kExitFailure;
}

}  // namespace

int cmd_generate(const Args& args) {
  std::string model, prompt, manifest;
  std::string prompt_file;
  int max_tokens = 64, threads = 0, tp = 1, pp = 1, top_k = 0, batch = 1;
  double temperature = 0, top_p = 1.0;
  std::uint64_t seed = 0;
  std::vector<std::string> stops;
  po::options_description opts("prima generate --model PATH --prompt TEXT [options]");
  opts.add_options()("help,h", "show this help")("model", po::value(&model),
                                                 "GGUF model file (llama architecture)")(
      "prompt", po::value(&prompt), "the prompt text")("prompt-file", po::value(&prompt_file),
                                                       "read the prompt text from this file")(
      "chat", "apply the model's chat template to the prompt as a user message")(
      "max-tokens", po::value(&max_tokens)->default_value(64), "tokens to generate at most")(
      "temperature", po::value(&temperature)->default_value(0.0), "0: greedy")(
      "top-k", po::value(&top_k)->default_value(0), "0: no top-k cut")(
      "top-p", po::value(&top_p)->default_value(1.0), "1: no nucleus cut")(
      "seed", po::value(&seed)->default_value(0), "sampling seed")(
      "threads", po::value(&threads)->default_value(0), "kernel threads per rank (0: all cores)")(
      "tp", po::value(&tp)->default_value(1), "tensor-parallel ranks")(
      "pp", po::value(&pp)->default_value(1), "pipeline stages")(
      "ids", "print the generated token ids instead of the text")(
      "ignore-eos", "do not stop at end-of-generation tokens (benchmarks)")(
      "batch", po::value(&batch)->default_value(1),
      "run N copies of the request at once (seeds seed..seed+N-1); prints the first, reports "
      "the aggregate throughput")("stop", po::value(&stops)->composing(),
                                  "stop string (repeatable)")(
      "manifest", po::value(&manifest), "sha256 manifest to verify the model against")(
      "repack",
      "pack the Q4_1/Q8_0 weights into 16-row panels for the AVX-512 VNNI kernels (the default "
      "where the CPU has them; else a note and the GGUF layout): the same results as the GGUF "
      "layout (llama.cpp's operations, bit for bit), about 1.5x the decode tokens per second, "
      "+21 MiB peak memory for SmolLM2")(
      "no-repack",
      "keep the weights in the GGUF layout (no packed copy: less memory, the kernels llama.cpp's "
      "CPU build runs; the same results)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "prima generate: %s\n", e.what());
    return kExitBadInput;
  }
  if (vm.count("help")) {
    std::cout << opts
              << "\nUnder mpirun (-np = tp x pp) rank 0 prints the completion; other ranks "
                 "execute.\nexample: prima generate --model models/SmolLM2-135M-Instruct.Q4_1.gguf "
                 "--prompt 'Hi' --chat\n";
    return kExitOk;
  }
  if (!prompt_file.empty()) {
    std::ifstream in(prompt_file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "prima generate: cannot read --prompt-file %s\n", prompt_file.c_str());
      return kExitBadInput;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    prompt = ss.str();
  }
  if (model.empty() || (!vm.count("prompt") && prompt_file.empty())) {
    std::fprintf(stderr, "prima generate: --model and --prompt are required (see --help)\n");
    return kExitBadInput;
  }
  if (max_tokens < 1 || temperature < 0 || top_k < 0 || top_p <= 0 || top_p > 1 || batch < 1 ||
      batch > 256) {
    std::fprintf(stderr,
                 "prima generate: need --max-tokens >= 1, --temperature >= 0, --top-k >= 0, "
                 "0 < --top-p <= 1, 1 <= --batch <= 256\n");
    return kExitBadInput;
  }

  for (const auto& s : stops)
    if (s.empty()) {
      std::fprintf(stderr, "prima generate: --stop needs a non-empty string\n");
      return kExitBadInput;
    }

  real::RealBackendOptions bo;
  bo.model_path = model;
  bo.manifest = manifest;
  bo.threads = threads;
  bo.tp = tp;
  bo.pp = pp;
  bo.max_num_seqs = batch;
  if (vm.count("repack") && vm.count("no-repack")) {
    std::fprintf(stderr, "prima generate: --repack and --no-repack exclude each other\n");
    return kExitBadInput;
  }
  bo.repack = vm.count("no-repack") == 0;
  auto opened = real::RealBackend::open(bo);
  if (!opened.ok()) {
    std::fprintf(stderr, "prima generate: %s\n", opened.status().message().c_str());
    return exit_for(opened.status());
  }
  if (vm.count("repack") && !(*opened)->repacked() && (*opened)->is_leader())
    std::fprintf(stderr,
                 "prima generate: --repack: this CPU has no AVX-512 VNNI packed kernels; the "
                 "weights keep the GGUF layout\n");
  std::unique_ptr<real::RealBackend> backend = std::move(*opened);
  if (!backend->is_leader()) {
    Status st = backend->run_worker();
    if (!st.ok()) {
      std::fprintf(stderr, "prima generate (worker): %s\n", st.message().c_str());
      return kExitFailure;
    }
    return kExitOk;
  }

  const real::Tokenizer& tok = backend->tokenizer();
  std::string text = prompt;
  if (vm.count("chat")) {
    auto t = tok.apply_chat_template({{"user", prompt}}, true);
    if (!t.ok()) {
      std::fprintf(stderr, "prima generate: --chat: %s\n", t.status().message().c_str());
      return kExitBadInput;
    }
    text = *t;
  }
  std::vector<int> ids = tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
  const int ctx = backend->context_length();
  if (ids.empty()) {
    std::fprintf(stderr, "prima generate: the prompt has no tokens\n");
    return kExitBadInput;
  }
  if (static_cast<int>(ids.size()) >= ctx) {
    std::fprintf(stderr,
                 "prima generate: the prompt has %zu tokens, the model's context is %d tokens\n",
                 ids.size(), ctx);
    return kExitBadInput;
  }
  max_tokens = std::min(max_tokens, ctx - static_cast<int>(ids.size()));

  WallRuntime rt;
  Executor* ex = backend->executor(&rt);
  cluster::EngineOptions eo;
  eo.scheduler.block_size = backend->block_size();
  eo.scheduler.max_num_seqs = batch;
  eo.max_model_len = ctx;
  cluster::ReplicaSetup rs;
  rs.executor = ex;
  rs.gpus = tp * pp;
  rs.stage_gpus = tp;
  rs.num_kv_blocks = backend->num_kv_blocks();
  metrics::Recorder rec(tp * pp);
  cluster::ServingEngine engine(&rt, eo, {rs}, &rec);

  Request r;
  r.arrival_s = rt.now();
  r.prompt_tokens = static_cast<int>(ids.size());
  r.prompt_ids = ids;
  r.max_output_tokens = max_tokens;
  r.sampling.temperature = temperature;
  r.sampling.top_k = top_k;
  r.sampling.top_p = top_p;
  r.sampling.seed = seed;
  if (!vm.count("ignore-eos")) r.stop_ids = tok.eog_ids();

  const bool print_ids = vm.count("ids") > 0;
  std::vector<int> out;
  std::string shown;  // text printed so far
  bool done = false, stopped = false;
  Time first_token_s = -1, end_s = 0;
  Outcome outcome = Outcome::kPending;
  std::string reason;
  auto emit = [&](bool final) {
    std::string t = tok.decode(out, /*skip_special=*/true);
    for (const auto& s : stops) {
      const auto p = t.find(s);
      if (p != std::string::npos) {
        t.resize(p);
        stopped = true;
      }
    }
    if (!print_ids && t.size() > shown.size() && t.compare(0, shown.size(), shown) == 0) {
      // Hold back an incomplete UTF-8 tail until it completes (or the end).
      std::size_t n = t.size();
      if (!final && !stopped) {
        // Hold back a tail that may be the start of a stop string.
        for (const auto& s : stops)
          for (std::size_t k = std::min(s.size() - 1, n - shown.size()); k > 0; --k)
            if (t.compare(n - k, k, s, 0, k) == 0) {
              n -= k;
              break;
            }
        std::size_t k = n;
        while (k > shown.size() && (static_cast<unsigned char>(t[k - 1]) & 0xC0) == 0x80) --k;
        if (k > shown.size() && (static_cast<unsigned char>(t[k - 1]) & 0x80)) n = k - 1;
      }
      std::fwrite(t.data() + shown.size(), 1, n - shown.size(), stdout);
      std::fflush(stdout);
      shown = t.substr(0, n);
    }
  };
  // --batch: the first request is the one printed; all count in the throughput.
  RequestId first_id = 0;
  int ended = 0;
  std::int64_t generated_all = 0;
  Time last_first_token_s = 0;
  int started = 0;                 // requests that produced their first token
  std::int64_t batch_decoded = 0;  // tokens produced once all had started

  engine.on_token = [&](const Sequence& s) {
    if (s.num_generated == 1) {
      ++started;
      last_first_token_s = rt.now();
    } else if (started == batch) {
      ++batch_decoded;
    }
    if (s.req.id != first_id) return;
    if (first_token_s < 0) first_token_s = rt.now();
    out = s.output_ids;
    emit(false);
    if (stopped) {
      done = true;
      end_s = rt.now();
      rt.stop();
    }
  };
  engine.on_end = [&](const Sequence& s) {
    generated_all += s.num_generated;
    end_s = rt.now();
    if (++ended == batch && !stopped) done = true;
    if (s.req.id != first_id) return;
    outcome = s.outcome;
    reason = s.reason;
    if (!stopped) out = s.output_ids;
  };
  const Time t0 = rt.now();
  for (int i = 1; i < batch; ++i) {
    Request copy = r;
    copy.sampling.seed = seed + i;
    copy.id = 0;
    engine.submit(std::move(copy));
  }
  first_id = engine.submit(std::move(r));
  if (!done) rt.run_until([&] { return done; });
  emit(true);
  backend->shutdown();  // joins the executor's worker, releases the other ranks

  if (outcome == Outcome::kRejected || outcome == Outcome::kFailed) {
    std::fprintf(stderr, "prima generate: request %s: %s\n",
                 outcome == Outcome::kRejected ? "rejected" : "failed", reason.c_str());
    return outcome == Outcome::kRejected ? kExitBadInput : kExitFailure;
  }
  if (print_ids) {
    for (std::size_t i = 0; i < out.size(); ++i) std::printf("%s%d", i ? " " : "", out[i]);
  }
  std::printf("\n");
  std::fflush(stdout);
  const double prefill_s = first_token_s > t0 ? first_token_s - t0 : 0;
  const double decode_s = end_s - first_token_s;
  std::fprintf(stderr,
               "prompt: %zu tokens, generated: %zu tokens; prefill %.1f tokens/s (%.3f s), "
               "decode %.1f tokens/s (%.3f s)\n",
               ids.size(), out.size(), prefill_s > 0 ? ids.size() / prefill_s : 0.0, prefill_s,
               decode_s > 0 && out.size() > 1 ? (out.size() - 1) / decode_s : 0.0, decode_s);
  if (batch > 1) {
    // Decode phase of the batch: from the last request's first token to the last end.
    const double phase_s = end_s - last_first_token_s;
    std::fprintf(stderr,
                 "batch %d: %lld tokens generated in %.3f s (%.1f tokens/s overall), batch decode "
                 "%.1f tokens/s\n",
                 batch, static_cast<long long>(generated_all), end_s - t0,
                 end_s > t0 ? generated_all / (end_s - t0) : 0.0,
                 phase_s > 0 ? batch_decoded / phase_s : 0.0);
  }
  return kExitOk;
}

}  // namespace prima::cli
