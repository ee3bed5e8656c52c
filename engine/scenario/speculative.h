// Speculative decoding in a scenario ("speculative"): a draft model, or the target's
// multi-token-prediction (MTP) heads, proposes num_tokens tokens per decoding sequence per
// step, the target verifies them in the step, and each is accepted with probability
// acceptance_rate until the first rejection. The scheduler carries the tokens and draws the
// acceptances (SchedulerOptions), the cost model the draft passes (CostModel::set_draft).
// Schema: docs/scenario-format.md. Plain value; thread-compatible.
#pragma once

#include <string>

#include "engine/config/json_reader.h"
#include "engine/model/model_spec.h"

namespace prima::scenario {

struct SpeculativeSpec {
  std::string method;  // "draft" (a draft model) or "mtp" (the target's MTP heads); "": off
  int num_tokens = 0;  // drafts per decoding sequence per step
  double acceptance_rate = 0;
  int mtp_layers = 1;      // mtp: transformer layers of the heads
  model::ModelSpec draft;  // the model the draft passes cost (mtp: the target's layers)
  bool enabled() const { return num_tokens > 0; }
  // Weight bytes the drafting adds to the GPUs at quantization q (MTP heads: their layers
  // only; they share the target's embedding and LM head).
  double weight_bytes(model::Quantization q) const;
  // Tokens a step produces per sequence on average with k drafts: (1 - a^(k+1)) / (1 - a).
  static double expected_tokens(int k, double a);
};

// Parses r (the "speculative" object) for a scenario whose model is `target`. Throws
// ConfigError naming the file and JSON path (acceptance_rate outside [0, 1], num_tokens
// outside 1..16, a draft model with mtp or none with draft, an unknown model).
SpeculativeSpec parse_speculative(const config::JsonReader& r, const model::ModelSpec& target);

}  // namespace prima::scenario
