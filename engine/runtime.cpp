#include "engine/runtime.h"

namespace prima {

void BatchShape::add(const SeqWork& w) {
  ++num_seqs;
  if (w.is_prefill)
    prefill_tokens += w.num_tokens;
  else
    decode_tokens += w.num_tokens;
  if (w.samples) ++sampled;
  const double n = w.num_tokens, c = w.context_len;
  attended_pairs += n * c - n * (n - 1) / 2;
  kv_tokens_read += c;
}

}  // namespace prima
