// `prima serve --backend real`: a GGUF model on this machine's CPU behind the HTTP server.
// RealCodec gives the server the model's tokenizer and chat template (server/text_codec.h);
// the engine (one replica) runs on a WallRuntime loop on the calling thread. Under mpirun
// with --tp/--pp, rank 0 serves HTTP and the other ranks execute its steps.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "backends/real/gguf.h"
#include "backends/real/real_backend.h"
#include "backends/real/tokenizer.h"
#include "cli/commands.h"
#include "cli/real_backend_open.h"
#include "cli/serve.h"
#include "engine/cluster/serving_engine.h"
#include "engine/metrics/recorder.h"
#include "backends/wall/wall_runtime.h"
#include "server/text_codec.h"

namespace prima::cli {
namespace {

class RealCodec : public server::TextCodec {
 public:
  explicit RealCodec(const real::Tokenizer& tok) : tok_(tok) {}
  bool real() const override { return true; }

  void encode(std::string_view text, server::GenRequest* g) const override {
    g->prompt_ids = tok_.encode(text, /*add_special=*/true, /*parse_special=*/true);
    g->prompt_tokens = static_cast<int>(g->prompt_ids.size());
  }

  std::optional<server::ApiError> encode_chat(const std::vector<server::ChatTurn>& msgs,
                                              server::GenRequest* g) const override {
    std::vector<real::ChatMessage> m;
    m.reserve(msgs.size());
    for (const auto& t : msgs) m.push_back({t.role, t.content});
    auto text = tok_.apply_chat_template(m, /*add_generation_prompt=*/true);
    if (!text.ok())
      return server::bad_field("messages", "cannot render the chat: " + text.status().message());
    // The template writes the special tokens as text: parse them back.
    encode(*text, g);
    return std::nullopt;
  }

  std::string piece(int, int id) const override {
    if (id < 0 || id >= tok_.vocab_size() || tok_.is_special(id)) return "";
    return tok_.piece(id);
  }

  std::vector<int> stop_ids() const override { return tok_.eog_ids(); }
  int vocab_size() const override { return tok_.vocab_size(); }

  std::optional<server::ApiError> check_ids(const std::vector<int>& ids,
                                            const std::string& path) const override {
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || ids[i] >= tok_.vocab_size())
        return server::bad_field(path, fmt::format("'{}[{}]' = {} is not a token id of this model "
                                                   "(0..{})",
                                                   path, i, ids[i], tok_.vocab_size() - 1));
    return std::nullopt;
  }

 private:
  const real::Tokenizer& tok_;
};

}  // namespace

int serve_real(const ServeOptions& o) {
  if (o.max_num_seqs < 1 || o.max_model_len < 0 || o.kernel_threads < 0) {
    std::fprintf(stderr,
                 "prima serve: --max-num-seqs must be >= 1, --max-model-len and --kernel-threads "
                 ">= 0\n");
    return kExitBadInput;
  }
  real::RealBackendOptions bo;
  bo.model_path = o.model_path;
  bo.manifest = o.manifest;
  bo.threads = o.kernel_threads;
  bo.tp = o.tp;
  bo.pp = o.pp;
  bo.max_num_seqs = o.max_num_seqs;
  bo.max_model_len = o.max_model_len;
  bo.repack = !o.no_repack;
  int exit_code = kExitOk;
  std::unique_ptr<real::RealBackend> backend =
      open_real_backend(bo, o.repack, "prima serve", &exit_code);
  if (!backend) return exit_code;
  if (!backend->is_leader()) return run_real_worker(backend.get(), "prima serve");
  const int ctx = o.max_model_len > 0 ? std::min(o.max_model_len, backend->context_length())
                                      : backend->context_length();

  WallRuntime rt;
  cluster::EngineOptions eo;
  eo.scheduler.block_size = backend->block_size();
  eo.scheduler.max_num_seqs = o.max_num_seqs;
  eo.max_model_len = ctx;
  cluster::ReplicaSetup rs;
  rs.executor = backend->executor(&rt);
  rs.gpus = o.tp * o.pp;
  rs.stage_gpus = o.tp;
  rs.num_kv_blocks = backend->num_kv_blocks();
  metrics::Recorder rec(o.tp * o.pp);
  rec.set_retention(10000, 3600);  // no report is written: bounded memory (docs/serving.md)
  cluster::ServingEngine engine(&rt, eo, {rs}, &rec);
  engine.start();

  RealCodec codec(backend->tokenizer());
  server::EngineBridge bridge(
      &engine, &rt, [&](std::function<void()> fn) { rt.post(std::move(fn)); }, &codec);
  server::ModelInfo model;
  model.name = o.served_name;
  if (model.name.empty()) model.name = std::filesystem::path(o.model_path).stem().string();
  model.max_model_len = ctx;
  model.created = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  model.codec = &codec;
  server::ServerMetrics metrics(model.name, model.max_model_len);
  bridge.set_metrics(&metrics, &rec, o.tp * o.pp);

  const nlohmann::json limits = engine_limits(engine);
  const std::string banner =
      fmt::format("{} ({}) on this CPU, TP{} x PP{}, context {}; {}", model.name, o.model_path,
                  o.tp, o.pp, ctx, describe_limits(limits));
  ServeLoop loop;
  loop.run = [&](const std::function<void()>& publish) {
    // Gauges every 20 ms of wall time (the loop otherwise sleeps until work arrives).
    std::function<void()> tick = [&] {
      publish();
      rt.at(rt.now() + 0.02, tick);
    };
    rt.post(tick);
    rt.run();
  };
  loop.stop = [&] { rt.stop(); };
  const int rc = run_server(o, &bridge, &metrics, model, banner, loop, [&](nlohmann::json* j) {
    (*j)["model_file"] = o.model_path;
    (*j)["tp"] = o.tp;
    (*j)["pp"] = o.pp;
    (*j)["limits"] = limits;
  });
  backend->shutdown();  // joins the executor's worker, releases the other ranks
  return rc;
}

}  // namespace prima::cli
