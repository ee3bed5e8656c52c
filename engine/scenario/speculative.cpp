// Speculative decoding's scenario section (see speculative.h).
#include "engine/scenario/speculative.h"

#include <cmath>

namespace prima::scenario {

double SpeculativeSpec::expected_tokens(int k, double a) {
  if (a >= 1) return k + 1;
  return (1 - std::pow(a, k + 1)) / (1 - a);
}

double SpeculativeSpec::weight_bytes(model::Quantization q) const {
  if (method != "mtp") return model::model_weight_bytes(draft, q);
  double params = 0;
  for (int l = 0; l < draft.layers; ++l) params += draft.layer_params(l);
  return model::layer_weight_bytes(params, q);
}

SpeculativeSpec parse_speculative(const config::JsonReader& r, const model::ModelSpec& target) {
  SpeculativeSpec s;
  s.method = r.one_of("method", {"draft", "mtp"});
  s.num_tokens = static_cast<int>(r.positive_integer("num_tokens"));
  if (s.num_tokens > 16)
    r.fail("num_tokens",
           "expected 1 to 16 draft tokens per step, got " + std::to_string(s.num_tokens));
  if (!r.has("acceptance_rate"))
    r.fail("acceptance_rate", "missing required field (expected a number in [0, 1])");
  const config::Json& a = r.value("acceptance_rate");
  if (!a.is_number() || !(a.get<double>() >= 0 && a.get<double>() <= 1))
    r.fail("acceptance_rate",
           "expected a number in [0, 1] (the probability that the target "
           "accepts a draft token), got " +
               config::describe(a));
  s.acceptance_rate = a.get<double>();
  if (s.method == "draft") {
    if (!r.has("draft_model"))
      r.fail("draft_model",
             "missing required field: method \"draft\" needs the draft model "
             "(a catalog name or a model object)");
    if (r.has("mtp_layers")) r.fail("mtp_layers", "applies to method \"mtp\" only");
    s.draft = model::parse_model(r, "draft_model");
  } else {
    if (r.has("draft_model"))
      r.fail("draft_model", "method \"mtp\" drafts with the target's own heads: no draft model");
    s.mtp_layers = static_cast<int>(r.positive_integer("mtp_layers", 1));
    if (s.mtp_layers > target.layers)
      r.fail("mtp_layers",
             "expected at most the model's " + std::to_string(target.layers) + " layers");
    s.draft = target;
    s.draft.name = target.name + " MTP heads";
    s.draft.layers = s.mtp_layers;
    s.draft.dense_layers = 0;
  }
  r.finish();
  return s;
}

}  // namespace prima::scenario
