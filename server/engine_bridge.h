// EngineBridge: where HTTP handler threads meet the engine's loop. A handler submits a
// GenRequest and gets a TokenStream; the request is posted into the loop, enters the engine
// at the loop's current time, and the engine's on_token / on_end hooks (installed here) fill
// the stream. cancel() posts ServingEngine::cancel (a client went away). publish() runs on
// the loop after each slice, after each submit and cancel the loop takes in, and before a
// request's first token is handed over, and copies the engine's gauges into a snapshot that
// any thread may read (/health, limits).
//
// Thread-safety: submit, cancel, snapshot: any thread. The constructor, publish and the hooks:
// the loop thread. Ownership: borrows the engine, the metrics and the post function's target;
// owns the map id -> stream (shared with the handlers).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "engine/cluster/serving_engine.h"
#include "engine/metrics/recorder.h"
#include "server/metrics.h"
#include "server/text_decoder.h"
#include "server/token_stream.h"

namespace prima::server {

// What the server asks of the engine for one request.
struct GenRequest {
  int prompt_tokens = 0;
  int max_tokens = 0;
  Priority priority = Priority::kNormal;
  double sla_s = 0;
  std::vector<int> prompt_ids;    // the prompt's ids (sent by the client, or a real tokenizer's)
  SamplingParams sampling;        // used by the real backend
  bool has_seed = false;          // sampling.seed was given (else the bridge draws one)
  std::vector<std::string> stop;  // stop strings: the text ends before the first one
  bool ignore_eos = false;        // do not end at the model's end-of-generation tokens
  // vLLM's extras. min_tokens: no end-of-generation token, stop id or stop string ends the
  // request before this many output tokens; stop_token_ids: more ids that end it (kept even
  // with ignore_eos); skip_special_tokens false: control tokens' text is in the output;
  // include_stop_str: the stop string (or a stop token's text) that ended it stays in it.
  int min_tokens = 0;
  std::vector<int> stop_token_ids;
  bool skip_special_tokens = true;
  bool include_stop_str = false;
};

struct EngineSnapshot {
  std::int64_t in_system = 0;  // requests in the engine (queued, running, leaving)
  int running = 0, waiting = 0;
  double kv_usage = 0;  // mean over replicas up
  std::int64_t kv_free_blocks = 0, kv_blocks = 0;
  std::int64_t submitted = 0, ended = 0;  // through this bridge
  double now_s = 0;                       // engine time of the snapshot
  // Replicas by state (removed ones not counted); published == false until the engine's
  // first publish (the server then treats the engine as ready).
  bool published = false;
  int replicas_active = 0, replicas_unhealthy = 0, replicas_loading = 0, replicas_draining = 0;
  std::string replica_error;  // why an unhealthy replica was taken out ("" when none is)
  std::int64_t reroutes = 0;  // requests moved off a failed replica to another, so far
  int replicas() const {
    return replicas_active + replicas_unhealthy + replicas_loading + replicas_draining;
  }
  // Some replica serves (or the engine has not published yet).
  bool serving() const { return !published || replicas_active + replicas_draining > 0; }
};

class TextCodec;

// The sim backend's log-probabilities (it computes no distribution): a deterministic function
// of the request's seed and the token's position, documented as synthetic in docs/serving.md.
// Fills t->logprob and the top_n alternatives (the token itself first). The prompt's
// synthetic log-probabilities use the same function with the seed's complement.
void synthetic_logprobs(std::uint64_t seed, int index, int top_n, const TextCodec& codec,
                        StreamToken* t);

class EngineBridge {
 public:
  // post(fn) must run fn on the engine's loop (thread-safe).
  using PostFn = std::function<void(std::function<void()>)>;
  // `codec` (borrowed; null: the synthetic one) turns output tokens into text on the loop:
  // each StreamToken carries the text it releases, and a stop string ends the request early
  // (ServingEngine::finish_early).
  EngineBridge(cluster::ServingEngine* engine, Runtime* rt, PostFn post,
               const TextCodec* codec = nullptr);

  // Any thread. The stream ends exactly once (completed, rejected or failed).
  std::shared_ptr<TokenStream> submit(const GenRequest& g, RequestId* id);
  void cancel(RequestId id, const std::string& reason);
  // Ends every request still in the engine as failed (shutdown after the drain timeout).
  void fail_all(const std::string& reason);
  EngineSnapshot snapshot() const;
  // Requests submitted through the bridge whose end was not delivered yet.
  std::int64_t open() const { return open_.load(); }

  // Loop thread (before serving): feed these metrics (borrowed) from the hooks and
  // publish(); busy GPU time and preemptions come from the engine's recorder.
  void set_metrics(ServerMetrics* m, const metrics::Recorder* rec, int gpus);

  // Loop thread.
  void publish();

 private:
  struct Entry {
    std::shared_ptr<TokenStream> stream;
    double last_token_s = -1;  // loop thread only
    TextDecoder text;          // loop thread only
    int min_tokens = 0;        // GenRequest's text options
    bool skip_special = true, include_stop = false;
  };
  // The text a token adds to the output (GenRequest's special-token options).
  std::string token_text(const Sequence& s, const Entry& e, int idx, int id) const;
  // The prompt's tokens with their log-probabilities (StreamToken::prompt): the model's
  // (Sequence::prompt_logprobs), or synthetic ones in simulation.
  std::vector<StreamToken> prompt_tokens(const Sequence& s) const;

  cluster::ServingEngine* engine_;
  Runtime* rt_;
  PostFn post_;
  const TextCodec* codec_;
  std::vector<int> stop_ids_;  // the codec's end-of-generation ids
  std::uint64_t seed_base_;    // seeds of requests that give none: drawn once per server
  std::atomic<RequestId> next_id_{1};
  std::atomic<std::int64_t> open_{0}, submitted_{0}, ended_{0};
  mutable std::mutex mu_;
  std::unordered_map<RequestId, Entry> streams_;  // guarded by mu_
  ServerMetrics* metrics_ = nullptr;
  const metrics::Recorder* recorder_ = nullptr;
  int gpus_ = 0;
  EngineSnapshot snap_;     // guarded by mu_
  int unhealthy_seen_ = 0;  // loop thread: unhealthy replicas at the last publish (for the log)
};

}  // namespace prima::server
