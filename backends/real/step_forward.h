// StepForward: one rank's share of a step's forward pass that RankRunner runs in place of its
// CPU layers, with its own transfers between the ranks of the job (TP all-reduces within a
// stage, hidden states from the previous stage and to the next): on the last stage's TP rank 0
// the logits of the step's logit rows, which RankRunner then samples on the host as it does the
// CPU path's; nothing elsewhere. The GPU forward pass (backends/real/cuda/DeviceForward) is one;
// RealBackendOptions::device_forward makes it. Called by one thread.
#pragma once

#include <string>
#include <vector>

#include "backends/real/comm/communicator.h"
#include "backends/real/step_codec.h"
#include "engine/core/request.h"
#include "engine/core/status.h"

namespace prima::real {

// Where a rank sits in a TP x PP job. Ranks are laid out stage-major:
// rank = stage * tp + tp_rank (rank 0: stage 0, TP rank 0, the leader).
struct RankLayout {
  int tp = 1, pp = 1, rank = 0;
  int stage() const { return rank / tp; }
  int tp_rank() const { return rank % tp; }
  int rank_of(int stage, int tp_rank) const { return stage * tp + tp_rank; }
  bool first_stage() const { return stage() == 0; }
  bool last_stage() const { return stage() == pp - 1; }
};

// What a rank's forward pass needs of its job besides the weights: its place, the replica's
// communicator (world ranks = RankLayout ranks) and its stage's TP group (null when tp == 1).
// Borrowed: they outlive the forward pass.
struct RankJob {
  RankLayout layout;
  Communicator* world = nullptr;
  Communicator* tp_group = nullptr;
};

// What `prima profile --device` reads of the device a StepForward runs on.
struct DeviceFacts {
  std::string name;          // cudaDeviceProp::name
  double memory_bytes = 0;   // total device memory
  double bandwidth_Bps = 0;  // measured: a device-to-device copy, bytes read and written per s
  double peak_ops = 0;       // the int8 dot-product (dp4a) peak: SMs x 512 ops x SM clock
  double launch_s = 0;       // measured: one small kernel, launch to completion
  std::string source;        // how the figures were obtained
};

// A logit row the device finished (StepForward::forward_sampled).
struct DeviceRow {
  bool done = false;
  int token = -1;          // a sampling row's id
  TokenLogprobs logprobs;  // filled when the row's sequence asks for log-probabilities
};

class StepForward {
 public:
  virtual ~StepForward() = default;
  // Checks the step and runs this rank's share of it. On the last stage's TP rank 0, sets
  // logits to the rows StepInput::logit_rows() names (logit_rows().size() x vocab); on other
  // ranks logits is left empty.
  virtual Status forward(const StepInput& s, std::vector<float>* logits) = 0;
  // As forward(), and (*rows)[r] for each logit row r: done where the device finished the row,
  // with the token it drew (a sampling row, as the host's sample_row would: same processing,
  // same draw) and the raw log-probabilities the sequence asks for (a scoring row: always),
  // whose logits are then not copied back (that row of *logits is left unset); not done where
  // the host samples or scores from the row's logits. This default finishes none.
  virtual Status forward_sampled(const StepInput& s, std::vector<float>* logits,
                                 std::vector<DeviceRow>* rows) {
    PRIMA_RETURN_IF_ERROR(forward(s, logits));
    rows->assign(s.logit_rows().size(), DeviceRow{});
    return ok_status();
  }
  // What runs it ("cuda:0 (NVIDIA H100 ...)", "prima CUDA emulator (CPU, 2 workers)").
  virtual std::string device() const = 0;
  // The device's figures, measured over `repeats` runs (median); unimplemented where the
  // forward pass has no device of its own.
  virtual Result<DeviceFacts> measure_device(int repeats) {
    return failed_precondition("this forward pass has no device to measure");
  }
};

}  // namespace prima::real
