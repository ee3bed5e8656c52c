// RankRunner: what one rank of a TP x PP job does with a step. Ranks are laid out stage-major:
// rank = stage * tp + tp_rank (rank 0: stage 0, TP rank 0, the leader).
//   - the leader sends each step (StepInput, encoded) to every other rank;
//   - the first stage embeds the tokens; other stages receive the hidden states of the
//     step's tokens from the rank with the same TP rank in the previous stage;
//   - every stage runs its layers (TP ranks all-reduce attention and FFN outputs within the
//     stage);
//   - the last stage's TP rank 0 computes the logits of the sampling rows, samples, and
//     sends the ids to the leader (unless it is the leader); other last-stage ranks stop.
// Several steps may be in flight in the pipeline (begin_step ... finish_step, FIFO).
// Not thread-safe: one thread drives it (the executor's worker on the leader, the main thread
// elsewhere). Borrows the communicators, weights, KV store and thread pool.
#pragma once

#include <deque>
#include <vector>

#include "backends/real/comm/communicator.h"
#include "backends/real/llama_forward.h"
#include "backends/real/logit_processing.h"
#include "backends/real/step_codec.h"
#include "backends/real/step_forward.h"
#include "backends/real/step_runner.h"

namespace prima::real {

// Layers [begin, end) of `stage` when `layers` are split over `pp` stages (as evenly as
// possible, earlier stages take the remainder).
std::pair<int, int> stage_layers(int layers, int pp, int stage);

class RankRunner : public StepRunner {
 public:
  // tp_group: the stage's TP communicator (null when tp == 1).
  RankRunner(RankLayout layout, Communicator* world, Communicator* tp_group,
             const LlamaWeights* weights, KvStore* kv, kernels::ThreadPool* pool);

  // Leader: checks the step, sends it to the other ranks and runs stage 0's share.
  Status begin_step(const StepInput& s) override;
  // Leader: what the oldest begun step sampled.
  Result<SampledTokens> finish_step(const StepInput& s) override;
  // Leader, with no step in flight: every rank answers.
  Status ping() override;
  // Leader: tells the other ranks to return from run_worker (idempotent).
  void shutdown() override;
  // Other ranks: executes the leader's steps until shutdown. A step that fails (a peer that
  // stopped answering) returns its status, unless keep_going: then the failure is written to
  // stderr and the rank waits for the leader's next message (its shutdown, or the end of the
  // job), so that in a job of several replicas the loss of one replica's rank does not end
  // this process, which would end the whole mpirun job with the healthy replicas.
  Status run_worker(bool keep_going = false);

  const RankLayout& layout() const { return layout_; }
  // Runs this rank's share of every step on `f` (borrowed; it moves the stage's activations
  // itself) instead of the CPU layers; sampling stays on the host.
  void use_forward(StepForward* f) { device_ = f; }

 private:
  Status run_stage(const StepInput& s, SampledTokens* out);
  Status send_all(const StepInput& s);

  RankLayout layout_;
  Communicator* world_;
  LlamaForward fwd_;
  StepForward* device_ = nullptr;
  const LlamaWeights* w_;
  std::vector<float> x_, logits_;
  std::vector<DeviceRow> done_;  // the rows the device forward pass finished
  SampleScratch scratch_;
  std::deque<SampledTokens> done_tokens_;  // leader, pp == 1: results of begun steps
  bool shut_down_ = false;
};

}  // namespace prima::real
