// THE SEAM between the engine and the backends (DESIGN.md, "The seam").
//
// The engine is a single-threaded, event-driven state machine. Everything that depends on
// time, devices or the network comes through these interfaces:
//   Runtime  - the clock and the event loop (timers, posted closures);
//   Executor - runs one scheduled step of one replica on its devices;
//   Fabric   - moves bytes between devices (KV migration, prefill->decode hand-off).
// Backends: sim (SimGrid timers, Execs and flows), real (event-loop thread + device workers),
// tests (tests/support/manual_runtime.h: a manual clock).
//
// Threading: all callbacks (`at`, `post`, `done`) run on the engine's loop, one at a time.
// Only Runtime::post may be called from other threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/core/request.h"
#include "engine/core/status.h"
#include "engine/core/types.h"

namespace prima {

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual Time now() const = 0;
  // Runs fn on the loop at time t (>= now()). Returns an id for cancel().
  virtual TimerId at(Time t, std::function<void()> fn) = 0;
  // Cancels a pending timer; cancelling a fired or unknown timer is a no-op.
  virtual void cancel(TimerId id) = 0;
  // Runs fn on the loop as soon as possible. Thread-safe.
  virtual void post(std::function<void()> fn) = 0;
};

// One sequence's share of a step.
struct Sequence;

struct SeqWork {
  RequestId request = 0;
  int num_tokens = 0;       // tokens computed this step: a prefill chunk, or 1 when decoding
  int context_len = 0;      // tokens in the sequence's KV cache once this step is done
  bool is_prefill = false;  // computing prompt (or recomputed) tokens
  bool samples = false;     // produces a new token at the end of the step
  // Speculative decoding: draft tokens proposed for this decoding sequence and verified in
  // this step (num_tokens = 1 + draft_tokens; 0: none).
  int draft_tokens = 0;
  // The sequence itself, for backends that compute real tokens (token ids via
  // Sequence::token_at, the KV block table, sampling parameters). Read it only inside
  // Executor::launch, on the loop: copy what the devices need before returning.
  const Sequence* seq = nullptr;
};

// The shape of a batch, as the cost model needs it (aggregates over SeqWork).
struct BatchShape {
  int num_seqs = 0;
  std::int64_t prefill_tokens = 0;  // tokens of prefill chunks
  std::int64_t decode_tokens = 0;   // decode tokens (one per decoding sequence)
  std::int64_t sampled = 0;         // rows that go through the LM head
  // Sum over every computed token of the number of keys it attends to (causal):
  // for a chunk of n tokens ending at context c: n*c - n*(n-1)/2.
  double attended_pairs = 0;
  // Sum over sequences of the causal pairs within the step's own chunk (n (n + 1) / 2 for a
  // chunk of n tokens): the score matrix an unfused kernel builds over the new tokens.
  double chunk_pairs = 0;
  // Sum over sequences of the context read from the KV cache (c per sequence per layer).
  double kv_tokens_read = 0;
  // KV bytes moved between GPU and host memory for this step (swap preemption): sequences
  // swapped out to make room, and swapped-out sequences resumed. Costed over PCIe.
  double swap_out_bytes = 0;
  double swap_in_bytes = 0;
  // Seconds of KV blocks read back from offload tiers (host, NVMe, remote) for this step's
  // prefix-cache hits, at each tier's bandwidth. Paid before the step on stage 0.
  double kv_load_s = 0;
  // Speculative decoding: the draft passes before the step (the most draft tokens of a
  // sequence), the sequences drafting and the sum of their contexts.
  int draft_steps = 0;
  int draft_seqs = 0;
  double draft_context = 0;

  std::int64_t tokens() const { return prefill_tokens + decode_tokens; }
  // Inline: runs for every sequence of every step.
  void add(int num_tokens, int context_len, bool is_prefill, bool samples) {
    ++num_seqs;
    if (is_prefill)
      prefill_tokens += num_tokens;
    else
      decode_tokens += num_tokens;
    if (samples) ++sampled;
    const double c = context_len;
    if (num_tokens == 1) {
      attended_pairs += c;  // n c - n (n - 1) / 2 with n = 1, exactly
      chunk_pairs += 1;
    } else {
      const double n = num_tokens;
      attended_pairs += n * c - n * (n - 1) / 2;
      chunk_pairs += n * (n + 1) / 2;
    }
    kv_tokens_read += c;
  }
  void add(const SeqWork& w) {
    add(w.num_tokens, w.context_len, w.is_prefill, w.samples);
    if (w.draft_tokens > 0) {
      sampled += w.draft_tokens;  // every verified position goes through the LM head
      draft_steps = std::max(draft_steps, w.draft_tokens);
      ++draft_seqs;
      draft_context += w.context_len - w.draft_tokens;
    }
  }
};

struct StepBatch {
  ReplicaId replica = 0;
  std::uint64_t step_id = 0;
  // Per sequence, in the scheduler's order. An executor that times a step from its shape
  // alone (the simulator) does not read it.
  std::vector<SeqWork> seqs;
  BatchShape shape;  // kept consistent with seqs by add_seq()
  void add_seq(const SeqWork& w) {
    seqs.push_back(w);
    shape.add(w);
  }
};

struct StepResult {
  Status status;     // not ok: the step failed (device, link or peer failure)
  Time start_s = 0;  // when the step started on the devices
  Time end_s = 0;    // when its last stage finished
  double flops = 0;  // useful floating-point work done, all GPUs together
  // Busy seconds per pipeline stage (each stage's GPUs were busy this long).
  std::vector<double> stage_busy_s;
  // Speculative decoding: per sequence in `seqs` order, the draft tokens the verification
  // accepted (a backend that verifies real drafts); empty: the engine draws them from the
  // acceptance rate (SchedulerOptions::acceptance_rate).
  std::vector<int> accepted;
  // Real backend: sampled token ids per sequence in `seqs` order (-1 where none). Empty in sim.
  std::vector<int> tokens;
  // Real backend: per sequence in `seqs` order, the sampled token's log-probabilities where
  // its request asks for them (SamplingParams::logprobs); empty when no sequence does.
  std::vector<TokenLogprobs> logprobs;
  // Real backend: per sequence in `seqs` order, the log-probabilities of the prompt tokens
  // that follow the step's chunk positions (SamplingParams::prompt_logprobs): entry j is the
  // prompt token at position pos0 + j + 1. Empty when no sequence asks.
  std::vector<std::vector<TokenLogprobs>> prompt_logprobs;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Starts the step; `done` runs on the loop when it finishes or fails. The batch is copied.
  virtual void launch(const StepBatch& step, std::function<void(const StepResult&)> done) = 0;
  // How many steps may be in flight at once (pipeline depth; 1 without pipelining).
  virtual int max_inflight() const { return 1; }
  // Health probe of the replica's devices and links (the engine's health checks): done(ok)
  // when every device answers, done(error naming the device or link) otherwise. It may answer
  // late (an unresponsive device): the engine applies its own timeout. Runs done on the loop.
  virtual void check_health(std::function<void(Status)> done) { done(ok_status()); }
};

class Fabric {
 public:
  virtual ~Fabric() = default;
  virtual void transfer(DeviceId from, DeviceId to, Bytes n, std::function<void(Status)> done) = 0;
};

}  // namespace prima
