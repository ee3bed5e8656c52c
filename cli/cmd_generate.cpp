// `prima generate`: runs one prompt through the engine on the real backend (a GGUF model on
// CPU; TP x PP ranks under mpirun) and streams the completion to stdout. The engine is the
// same as in simulation (ServingEngine, one replica, its scheduler and KV block manager) on
// a WallRuntime, assembled by backends/real/real_cluster.h; ranks != 0 execute the leader's
// steps. Single-threaded apart from the
// backend's worker thread and the runtime's post().
#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backends/real/real_cluster.h"
#include "backends/real/tokenizer.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/generate_options.h"
#include "cli/real_cluster_open.h"
#include "cli/synthetic_option.h"

namespace po = boost::program_options;

namespace prima::cli {

namespace {

int fail(int code, const std::string& msg) {
  std::fprintf(stderr, "prima generate: %s\n", msg.c_str());
  return code;
}

// --prompt-file's text replaces --prompt.
Status read_prompt_file(GenerateOptions* o) {
  if (o->prompt_file.empty()) return ok_status();
  std::ifstream in(o->prompt_file, std::ios::binary);
  if (!in) return invalid_argument("cannot read --prompt-file " + o->prompt_file);
  std::stringstream ss;
  ss << in.rdbuf();
  o->prompt = ss.str();
  return ok_status();
}

std::unique_ptr<real::RealCluster> open_cluster(const GenerateOptions& o, int* exit_code) {
  real::RealBackendOptions bo = o.backend;
  bo.max_num_seqs = o.batch;
  bo.repack = !o.no_repack;
  bo.device_forward = device_forward(o.device.spec(), o.device.quant());
  return open_real_cluster(bo, o.repack, "prima generate", exit_code);
}

// The prompt's token ids (with the chat template under --chat), shorter than the context.
Result<std::vector<int>> prompt_ids(const GenerateOptions& o, const real::Tokenizer& tok, int ctx) {
  std::string text = *o.prompt;
  if (o.chat) {
    auto t = tok.apply_chat_template({{"user", *o.prompt}}, true);
    if (!t.ok()) return invalid_argument("--chat: " + t.status().message());
    text = *t;
  }
  std::vector<int> ids = tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
  if (ids.empty()) return invalid_argument("the prompt has no tokens");
  if (static_cast<int>(ids.size()) >= ctx)
    return invalid_argument(
        fmt::format("the prompt has {} tokens, the model's context is {} tokens", ids.size(), ctx));
  return ids;
}

// Streams the first request's text to stdout as it grows, cut at the first stop string. A
// tail that may be the start of a stop string, or an incomplete UTF-8 character, is held back
// until it completes (or the end). With --ids nothing is streamed.
class TextPrinter {
 public:
  TextPrinter(const real::Tokenizer& tok, const GenerateOptions& o)
      : tok_(tok), stops_(o.stops), print_ids_(o.print_ids) {}

  // `ids`: the request's output so far; `final`: print all of it.
  void emit(const std::vector<int>& ids, bool final) {
    std::string t = tok_.decode(ids, /*skip_special=*/true);
    for (const auto& s : stops_) {
      const auto p = t.find(s);
      if (p != std::string::npos) {
        t.resize(p);
        stopped_ = true;
      }
    }
    if (print_ids_ || t.size() <= shown_.size() || t.compare(0, shown_.size(), shown_) != 0) return;
    const std::size_t n = final || stopped_ ? t.size() : complete_prefix(t);
    std::fwrite(t.data() + shown_.size(), 1, n - shown_.size(), stdout);
    std::fflush(stdout);
    shown_ = t.substr(0, n);
  }
  bool stopped() const { return stopped_; }

 private:
  // How much of `t` can be shown before the end: not a possible stop-string start, not an
  // incomplete UTF-8 character.
  std::size_t complete_prefix(const std::string& t) const {
    std::size_t n = t.size();
    for (const auto& s : stops_)
      for (std::size_t k = std::min(s.size() - 1, n - shown_.size()); k > 0; --k)
        if (t.compare(n - k, k, s, 0, k) == 0) {
          n -= k;
          break;
        }
    std::size_t k = n;
    while (k > shown_.size() && (static_cast<unsigned char>(t[k - 1]) & 0xC0) == 0x80) --k;
    if (k > shown_.size() && (static_cast<unsigned char>(t[k - 1]) & 0x80)) n = k - 1;
    return n;
  }

  const real::Tokenizer& tok_;
  const std::vector<std::string> stops_;
  const bool print_ids_;
  std::string shown_;  // text printed so far
  bool stopped_ = false;
};

// What a run observed: the first request's output and end (it is the one printed), and the
// timing of the whole batch (--batch: every request counts in the throughput).
struct GenerateRun {
  std::vector<int> out;
  Outcome outcome = Outcome::kPending;
  std::string reason;
  Time t0 = 0, first_token_s = -1, end_s = 0;
  Time last_first_token_s = 0;     // when the last request produced its first token
  int started = 0;                 // requests that produced their first token
  std::int64_t batch_decoded = 0;  // tokens produced once all had started
  std::int64_t generated_all = 0;
};

// The request for the prompt, with the sampling flags.
Request make_request(const GenerateOptions& o, const std::vector<int>& ids, int max_tokens,
                     const real::Tokenizer& tok, Time now) {
  Request r;
  r.arrival_s = now;
  r.prompt_tokens = static_cast<int>(ids.size());
  r.prompt_ids = ids;
  r.max_output_tokens = max_tokens;
  r.sampling.temperature = o.temperature;
  r.sampling.top_k = o.top_k;
  r.sampling.top_p = o.top_p;
  r.sampling.seed = o.seed;
  if (!o.ignore_eos) r.stop_ids = tok.eog_ids();
  return r;
}

// Runs --batch copies of the request (seeds seed..seed+N-1) on the cluster's engine until
// every one has ended, or the first has reached a stop string; prints the first as it goes.
// Shuts the backend down.
GenerateRun run_requests(const GenerateOptions& o, real::RealCluster* cl,
                         const std::vector<int>& ids, int max_tokens, TextPrinter* printer) {
  WallRuntime& rt = *cl->rt;
  cluster::ServingEngine& engine = *cl->engine;
  GenerateRun run;
  RequestId first_id = 0;
  int ended = 0;
  bool done = false;
  engine.on_token = [&](const Sequence& s) {
    if (s.num_generated == 1) {
      ++run.started;
      run.last_first_token_s = rt.now();
    } else if (run.started == o.batch) {
      ++run.batch_decoded;
    }
    if (s.req.id != first_id) return;
    if (run.first_token_s < 0) run.first_token_s = rt.now();
    run.out = s.output_ids;
    printer->emit(run.out, false);
    if (printer->stopped()) {
      done = true;
      run.end_s = rt.now();
      rt.stop();
    }
  };
  engine.on_end = [&](const Sequence& s) {
    run.generated_all += s.num_generated;
    run.end_s = rt.now();
    if (++ended == o.batch && !printer->stopped()) done = true;
    if (s.req.id != first_id) return;
    run.outcome = s.outcome;
    run.reason = s.reason;
    if (!printer->stopped()) run.out = s.output_ids;
  };
  Request r = make_request(o, ids, max_tokens, cl->backend->tokenizer(), rt.now());
  run.t0 = rt.now();
  for (int i = 1; i < o.batch; ++i) {
    Request copy = r;
    copy.sampling.seed = o.seed + i;
    copy.id = 0;
    engine.submit(std::move(copy));
  }
  first_id = engine.submit(std::move(r));
  if (!done) rt.run_until([&] { return done; });
  printer->emit(run.out, true);
  cl->shutdown();  // joins the executor's worker (it posts to `rt`), releases other ranks
  // The hooks capture this function's locals; the engine outlives them (the cluster owns it).
  engine.on_token = nullptr;
  engine.on_end = nullptr;
  return run;
}

// The ids (under --ids) and the newline on stdout; prefill and decode speeds on stderr.
void print_summary(const GenerateOptions& o, std::size_t prompt_tokens, const GenerateRun& run) {
  const std::vector<int>& out = run.out;
  if (o.print_ids) {
    for (std::size_t i = 0; i < out.size(); ++i) std::printf("%s%d", i ? " " : "", out[i]);
  }
  std::printf("\n");
  std::fflush(stdout);
  const double prefill_s = run.first_token_s > run.t0 ? run.first_token_s - run.t0 : 0;
  const double decode_s = run.end_s - run.first_token_s;
  std::fprintf(stderr,
               "prompt: %zu tokens, generated: %zu tokens; prefill %.1f tokens/s (%.3f s), "
               "decode %.1f tokens/s (%.3f s)\n",
               prompt_tokens, out.size(), prefill_s > 0 ? prompt_tokens / prefill_s : 0.0,
               prefill_s, decode_s > 0 && out.size() > 1 ? (out.size() - 1) / decode_s : 0.0,
               decode_s);
  if (o.batch > 1) {
    // Decode phase of the batch: from the last request's first token to the last end.
    const double phase_s = run.end_s - run.last_first_token_s;
    const double all_s = run.end_s - run.t0;
    std::fprintf(stderr,
                 "batch %d: %lld tokens generated in %.3f s (%.1f tokens/s overall), batch decode "
                 "%.1f tokens/s\n",
                 o.batch, static_cast<long long>(run.generated_all), all_s,
                 run.end_s > run.t0 ? run.generated_all / all_s : 0.0,
                 phase_s > 0 ? run.batch_decoded / phase_s : 0.0);
  }
}

// Rank 0: tokenizes the prompt, runs it, prints the completion; the exit code.
int run_leader(const GenerateOptions& o, real::RealCluster* cl) {
  const real::Tokenizer& tok = cl->backend->tokenizer();
  const int ctx = cl->max_model_len;
  auto ids = prompt_ids(o, tok, ctx);
  if (!ids.ok()) return fail(kExitBadInput, ids.status().message());
  const int max_tokens = std::min(o.max_tokens, ctx - static_cast<int>(ids->size()));
  TextPrinter printer(tok, o);
  const GenerateRun run = run_requests(o, cl, *ids, max_tokens, &printer);
  if (run.outcome == Outcome::kRejected || run.outcome == Outcome::kFailed)
    return fail(run.outcome == Outcome::kRejected ? kExitBadInput : kExitFailure,
                fmt::format("request {}: {}",
                            run.outcome == Outcome::kRejected ? "rejected" : "failed", run.reason));
  print_summary(o, ids->size(), run);
  return kExitOk;
}

}  // namespace

int cmd_generate(const Args& args) {
  const po::options_description flags = generate_flags();
  po::variables_map vm;
  std::string error;
  if (!parse_flags(args, flags, &vm, &error)) return fail(kExitBadInput, error);
  if (vm.count("help")) {
    std::cout
        << flags
        << "\nUnder mpirun (-np = tp x pp) rank 0 prints the completion; other ranks "
           "execute.\nexample: prima generate --model models/SmolLM2-135M-Instruct.Q4_1.gguf "
           "--prompt 'Hi' --chat\n"
           "         prima generate --model M.gguf --prompt 'Hi' --device cuda      # on GPU 0\n"
           "         prima generate --model M.gguf --prompt 'Hi' --device cuda-emu  # the GPU "
           "kernels on the CPU execution layer (slow)\n"
           "         prima generate --synthetic llama-3-8b:bf16 --prompt 'Hi' --ids --device "
           "cuda  # Llama 3 8B's shape, random weights\n";
    return kExitOk;
  }
  GenerateOptions o = generate_options(vm);
  if (Status st = o.validate(); !st.ok()) return fail(kExitBadInput, st.message());
  if (auto code = device_unavailable("prima generate", o.device)) return *code;
  if (auto code =
          resolve_synthetic("prima generate", o.synthetic,
                            o.device.spec().kind != real::DeviceKind::kCpu, &o.backend.model_path))
    return *code;
  if (Status st = read_prompt_file(&o); !st.ok()) return fail(kExitBadInput, st.message());
  int exit_code = kExitOk;
  const std::unique_ptr<real::RealCluster> cl = open_cluster(o, &exit_code);
  if (!cl) return exit_code;
  if (!cl->is_leader()) return run_real_worker(cl.get(), "prima generate");
  return run_leader(o, cl.get());
}

}  // namespace prima::cli
