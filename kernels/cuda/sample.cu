// Sampling on the device (sample.h): a block of 256 threads per logit row.
//  - Typical sampling orders the row by |surprisal - entropy| with the same radix select (on the
//    negated deviation's key) and adds the candidates' probabilities in that order.
//  - Maxima and sums are block reductions in a fixed order (warp shuffles, then the warps in
//    order), so a row's result does not depend on scheduling.
//  - The n best of a row (top-k, the top log-probabilities, a top-p nucleus's candidates) are
//    found without sorting the vocabulary: a radix select on the logits' order-preserving keys
//    (four 8-bit passes of a shared-memory histogram) finds the n-th key, an ordered scan takes
//    the lowest ids among the keys equal to it, and only those n (at most 4,096) are sorted,
//    bitonically in shared memory, by descending logit then ascending id: the host's order.
//  - The draw over sorted candidates is sample_math.h's, which the host sampler also makes,
//    by one thread; plain temperature is an inverse CDF in id order over
//    chunk sums.
// NaN logits rank as -infinity.
#include <cuda_runtime.h>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/sample.h"
#include "kernels/cuda/sample_math.h"

namespace prima::cuda {

namespace {

constexpr int kThreads = 256;  // also the histogram's bins
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kNone = 0x7fffffff;

struct Shared {
  unsigned long long cand[kSampleMaxCandidates];  // (key << 32) | ~id, sorted descending
  int hist[kThreads];
  int count[kThreads];
  double part[kThreads];
  float fwarp[kWarps];
  double dwarp[kWarps];
  int sel, remaining, found, last_nonzero;
};

__device__ bool finite(double x) {
  return fabs(x) < INFINITY;
}

// Larger logits give larger keys; -0 is +0 and NaN is -inf.
__device__ unsigned order_key(float v) {
  if (v != v) v = -INFINITY;
  const unsigned b = __float_as_uint(v == 0.0f ? 0.0f : v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ float key_value(unsigned k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
__device__ float cand_value(const Shared& s, int j) {
  return key_value(unsigned(s.cand[j] >> 32));
}
__device__ int cand_id(const Shared& s, int j) {
  return int(~unsigned(s.cand[j] & 0xffffffffu));
}

// The largest v of the block's threads (NaN never: each thread's v starts at -inf and takes
// only larger values).
__device__ float block_max(float v, Shared& s) {
  for (int off = 16; off > 0; off /= 2) {
    const float o = __shfl_xor_sync(kFull, v, off);
    v = o > v ? o : v;
  }
  if (threadIdx.x % 32 == 0) s.fwarp[threadIdx.x / 32] = v;
  __syncthreads();
  float m = s.fwarp[0];
  for (int w = 1; w < kWarps; ++w) m = s.fwarp[w] > m ? s.fwarp[w] : m;
  __syncthreads();
  return m;
}

__device__ double block_sum(double v, Shared& s) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(kFull, v, off);
  if (threadIdx.x % 32 == 0) s.dwarp[threadIdx.x / 32] = v;
  __syncthreads();
  double sum = 0;
  for (int w = 0; w < kWarps; ++w) sum += s.dwarp[w];
  __syncthreads();
  return sum;
}

__device__ float row_max(const float* row, std::int64_t V, Shared& s) {
  float m = -INFINITY;
  for (std::int64_t i = threadIdx.x; i < V; i += kThreads)
    if (row[i] > m) m = row[i];
  return block_max(m, s);
}

// The first index of the largest value (NaN never wins): the host's argmax.
__device__ int block_argmax(const float* row, std::int64_t V, Shared& s) {
  float bv = -INFINITY;
  int bi = kNone;
  for (std::int64_t i = threadIdx.x; i < V; i += kThreads)
    if (row[i] > bv || (row[i] == bv && int(i) < bi)) bv = row[i], bi = int(i);
  for (int off = 16; off > 0; off /= 2) {
    const float ov = __shfl_xor_sync(kFull, bv, off);
    const int oi = __shfl_xor_sync(kFull, bi, off);
    if (ov > bv || (ov == bv && oi < bi)) bv = ov, bi = oi;
  }
  if (threadIdx.x % 32 == 0) {
    s.fwarp[threadIdx.x / 32] = bv;
    s.count[threadIdx.x / 32] = bi;
  }
  __syncthreads();
  float v = s.fwarp[0];
  int id = s.count[0];
  for (int w = 1; w < kWarps; ++w)
    if (s.fwarp[w] > v || (s.fwarp[w] == v && s.count[w] < id)) v = s.fwarp[w], id = s.count[w];
  __syncthreads();
  return id == kNone ? 0 : id;
}

// s.count[0..kThreads) replaced by its exclusive prefix sums (thread 0; the caller syncs).
__device__ void exclusive_scan_counts(Shared& s) {
  if (threadIdx.x != 0) return;
  int run = 0;
  for (int t = 0; t < kThreads; ++t) {
    const int c = s.count[t];
    s.count[t] = run;
    run += c;
  }
}

// s.cand[0..n) = the n largest of key(i) over i < V (descending key, ascending id), 1 <= n <=
// kSampleMaxCandidates, n <= V; key(i) an order_key.
template <typename KeyOf>
__device__ void select_top_keys(KeyOf key, std::int64_t V, int n, Shared& s) {
  const int t = threadIdx.x;
  // The n-th best key K: four passes over 8 bits each, from the top.
  unsigned prefix = 0, mask = 0;
  int remaining = n;  // of the keys under the prefix, how many are still to take
  for (int shift = 24; shift >= 0; shift -= 8) {
    s.hist[t] = 0;
    __syncthreads();
    for (std::int64_t i = t; i < V; i += kThreads) {
      const unsigned k = key(i);
      if ((k & mask) == prefix) atomicAdd(&s.hist[(k >> shift) & 255u], 1);
    }
    __syncthreads();
    if (t == 0) {
      int b = 255;
      for (; b > 0 && s.hist[b] < remaining; --b) remaining -= s.hist[b];
      s.sel = b;
      s.remaining = remaining;
    }
    __syncthreads();
    prefix |= unsigned(s.sel) << shift;
    mask |= 255u << shift;
    remaining = s.remaining;
  }
  // Every key above K, and the `remaining` lowest ids of those equal to it, in id order: each
  // thread owns a contiguous chunk; counts scanned in thread order give each its place.
  const std::int64_t chunk = (V + kThreads - 1) / kThreads;
  const std::int64_t b = std::int64_t(t) * chunk, e = b + chunk < V ? b + chunk : V;
  int above = 0, equal = 0;
  for (std::int64_t i = b; i < e; ++i) {
    const unsigned k = key(i);
    above += k > prefix;
    equal += k == prefix;
  }
  s.count[t] = equal;
  __syncthreads();
  exclusive_scan_counts(s);
  __syncthreads();
  int take = remaining - s.count[t];
  take = take < 0 ? 0 : (take > equal ? equal : take);
  __syncthreads();
  s.count[t] = above + take;
  __syncthreads();
  exclusive_scan_counts(s);
  __syncthreads();
  int pos = s.count[t], seen = 0;
  for (std::int64_t i = b; i < e; ++i) {
    const unsigned k = key(i);
    if (k > prefix || (k == prefix && seen++ < take))
      s.cand[pos++] = (static_cast<unsigned long long>(k) << 32) | ~unsigned(i);
  }
  // Bitonic sort, descending, padded with zeros (below every real entry: ~id >= 2^31).
  int P = 1;
  while (P < n) P *= 2;
  for (int i = n + t; i < P; i += kThreads) s.cand[i] = 0;
  __syncthreads();
  for (int k = 2; k <= P; k *= 2)
    for (int j = k / 2; j > 0; j /= 2) {
      for (int i = t; i < P; i += kThreads) {
        const int o = i ^ j;
        if (o <= i) continue;
        const unsigned long long a = s.cand[i], c = s.cand[o];
        if ((i & k) == 0 ? a < c : a > c) {
          s.cand[i] = c;
          s.cand[o] = a;
        }
      }
      __syncthreads();
    }
}

// s.cand[0..n) = the row's n best (descending value, ascending id).
__device__ void select_top(const float* row, std::int64_t V, int n, Shared& s) {
  select_top_keys([row](std::int64_t i) { return order_key(row[i]); }, V, n, s);
}

// Typical sampling's cut (the host's apply_typical) on w in place: at temperature T, the tokens
// by |surprisal - entropy| ascending (ids ascending on ties); the first whose cumulative
// probability stays below typical_p, and the one that reaches it, are kept, the others become
// -inf. The order is found by select_top_keys on the negated deviation over candidate sets of
// up to kSampleMaxCandidates; false (w unchanged) when the typical set needs more.
__device__ bool apply_typical(float* w, std::int64_t V, double T, double typical_p, Shared& s) {
  const int t = threadIdx.x;
  const float mx = row_max(w, V, s);
  if (!finite(mx)) return true;
  double sum = 0;
  int n_finite = 0;
  for (std::int64_t i = t; i < V; i += kThreads)
    if (finite(w[i])) {
      sum += exp((double(w[i]) - mx) / T);
      ++n_finite;
    }
  sum = block_sum(sum, s);
  const double lse = log(sum);
  double ent = 0;
  for (std::int64_t i = t; i < V; i += kThreads)
    if (finite(w[i])) {
      const double lp = (double(w[i]) - mx) / T - lse;
      ent -= exp(lp) * lp;
    }
  const double entropy = block_sum(ent, s);
  n_finite = int(block_sum(double(n_finite), s));
  // The larger the key, the smaller the deviation; non-finite logits below every finite one.
  auto key = [w, mx, T, lse, entropy](std::int64_t i) {
    if (!finite(w[i])) return 0u;
    const double lp = (double(w[i]) - mx) / T - lse;
    return order_key(-float(fabs(-lp - entropy)));
  };
  const int n = n_finite < kSampleMaxCandidates ? n_finite : kSampleMaxCandidates;
  select_top_keys(key, V, n, s);
  if (t == 0) {  // the cumulative mass in the sorted order, as the host adds it
    double cum = 0;
    int keep = 0;
    for (; keep < n; ++keep) {
      const int id = cand_id(s, keep);
      cum += exp((double(w[id]) - mx) / T - lse);
      if (!(cum < typical_p)) break;
    }
    s.found = keep < n ? keep + 1 : (n == n_finite ? n : 0);  // 0: the set needs more
  }
  __syncthreads();
  const int keep = s.found;
  __syncthreads();
  if (keep == 0) return false;
  if (keep < n_finite) {
    const unsigned long long last = s.cand[keep - 1];  // the last kept: its key and id
    for (std::int64_t i = t; i < V; i += kThreads) {
      const unsigned long long c = (static_cast<unsigned long long>(key(i)) << 32) | ~unsigned(i);
      if (finite(w[i]) && c < last) w[i] = -INFINITY;  // NaN stays, as on the host
    }
  }
  __syncthreads();
  return true;
}

// prob[j] = exp((c_j - c_0) / T) in double for the first k candidates (every thread).
__device__ void candidate_weights(const Shared& s, int k, double temperature, double* prob) {
  const double mx = cand_value(s, 0);
  for (int j = threadIdx.x; j < k; j += kThreads)
    prob[j] = exp((double(cand_value(s, j)) - mx) / temperature);
  __syncthreads();
}

// Temperature alone: the first id whose cumulative weight exp((l - max) / T) (float, as the
// host) exceeds u01 of the total, in id order; chunk sums scanned in thread order.
__device__ int draw_in_id_order(const float* row, std::int64_t V, double temperature, double u01,
                                Shared& s) {
  const int t = threadIdx.x;
  const float mx = row_max(row, V, s);
  const float inv_t = float(1.0 / temperature);
  const std::int64_t chunk = (V + kThreads - 1) / kThreads;
  const std::int64_t b = std::int64_t(t) * chunk, e = b + chunk < V ? b + chunk : V;
  double sum = 0;
  int last = -1;
  for (std::int64_t i = b; i < e; ++i) {
    const float w = expf((row[i] - mx) * inv_t);
    sum += w;
    if (w > 0) last = int(i);
  }
  s.part[t] = sum;
  if (t == 0) s.last_nonzero = -1;
  __syncthreads();
  if (last >= 0) atomicMax(&s.last_nonzero, last);
  if (t == 0) {
    double run = 0;
    for (int i = 0; i < kThreads; ++i) {
      const double c = s.part[i];
      s.part[i] = run;
      run += c;
    }
    s.found = kNone;
    s.dwarp[0] = run;  // the total
  }
  __syncthreads();
  const double u = u01 * s.dwarp[0];
  if (!(u < s.part[t])) {
    double cum = s.part[t];
    for (std::int64_t i = b; i < e; ++i) {
      cum += expf((row[i] - mx) * inv_t);
      if (u < cum) {
        atomicMin(&s.found, int(i));
        break;
      }
    }
  }
  __syncthreads();
  if (s.found != kNone) return s.found;
  return s.last_nonzero > 0 ? s.last_nonzero : 0;  // rounding left u at the very end
}

// The row the draw reads: `raw`, or its copy in w with logit_bias, the penalties, typical
// sampling's cut and min-p applied as the host's sample_row applies them. *typical_done is false
// when the typical set needs more candidates than fit (the host then samples the row).
__device__ const float* process_row(const SampleRow& r, const float* raw, std::int64_t V,
                                    const SampleBias* biases, const SampleEdit* edits, float* w,
                                    Shared& s, bool* typical_done) {
  const int t = threadIdx.x;
  const bool min_p = r.min_p > 0 && r.temperature > 0 && V > 1;
  const bool typical = r.typical_p < 1.0 && r.temperature > 0 && V > 1;
  if (!(r.bias_count > 0 || r.edit_count > 0 || min_p || typical)) return raw;
  for (std::int64_t i = t; i < V; i += kThreads) w[i] = raw[i];
  __syncthreads();
  if (t == 0)  // in the request's order: an id named twice adds twice, as on the host
    for (int j = 0; j < r.bias_count; ++j) {
      const SampleBias b = biases[r.bias_begin + j];
      if (b.id >= 0 && b.id < V) w[b.id] += b.bias;
    }
  __syncthreads();
  for (int j = t; j < r.edit_count; j += kThreads) {  // one entry per id: no two threads meet
    const SampleEdit e = edits[r.edit_begin + j];
    if (e.id < 0 || e.id >= V) continue;
    float l = w[e.id];
    if (e.repeat) l = l > 0 ? l / r.repetition : l * r.repetition;
    w[e.id] = l - e.subtract;
  }
  __syncthreads();
  if (typical) *typical_done = apply_typical(w, V, r.temperature, r.typical_p, s);
  if (min_p && *typical_done) {
    const float mx = row_max(w, V, s);
    if (finite(mx)) {
      const double cut = double(mx) + r.temperature * log(r.min_p);
      for (std::int64_t i = t; i < V; i += kThreads)
        if (double(w[i]) < cut) w[i] = -INFINITY;
    }
    __syncthreads();
  }
  return w;
}

__global__ void sample_kernel(const float* logits, std::int64_t V, const SampleRow* rows,
                              const SampleBias* biases, const SampleEdit* edits, float* work,
                              double* scratch, SampleOut* outs) {
  __shared__ Shared s;
  const SampleRow r = rows[blockIdx.x];
  const float* raw = logits + std::int64_t(r.row) * V;
  SampleOut* out = outs + blockIdx.x;
  double* prob = scratch + std::int64_t(blockIdx.x) * kSampleMaxCandidates;
  const int t = threadIdx.x;

  // The raw row's log-sum-exp and its most likely ids, before any processing.
  double lse = 0;
  if (r.n_top >= 0) {
    const float mx = row_max(raw, V, s);
    double sum = 0;
    if (finite(mx))
      for (std::int64_t i = t; i < V; i += kThreads)
        if (finite(raw[i])) sum += exp(double(raw[i]) - mx);
    sum = block_sum(sum, s);
    lse = finite(mx) ? mx + log(sum) : double(mx);
    int n = r.n_top < kSampleMaxTop ? r.n_top : kSampleMaxTop;
    n = n < V ? n : int(V);
    if (n > 0) {
      select_top(raw, V, n, s);
      if (t < n) {
        out->top_id[t] = cand_id(s, t);
        out->top_logprob[t] = float(double(cand_value(s, t)) - lse);
      }
    }
    if (t == 0) out->n_top = n;
  } else if (t == 0) {
    out->n_top = 0;
  }
  if (r.kind == kSampleScore) {
    if (t == 0) {
      out->token = -1;
      out->logprob = r.target >= 0 && r.target < V ? float(double(raw[r.target]) - lse) : -INFINITY;
      out->done = 1;
    }
    return;
  }

  // logit_bias, the penalties, typical sampling's cut and min-p into this row's copy.
  bool typical_done = true;
  const float* row =
      process_row(r, raw, V, biases, edits, work + std::int64_t(blockIdx.x) * V, s, &typical_done);

  // The draw.
  int token = 0, done = 1;
  const bool top_k = r.top_k > 0 && r.top_k < V;
  if (!typical_done) {
    done = 0;  // the typical set needs more candidates than fit: the host samples the row
  } else if (r.temperature <= 0 || r.top_k == 1) {
    token = block_argmax(row, V, s);
  } else if (!top_k && r.top_p >= 1.0) {
    token = draw_in_id_order(row, V, r.temperature, r.u01, s);
  } else if (top_k) {
    if (r.top_k > kSampleMaxCandidates) {
      done = 0;
    } else {
      select_top(row, V, r.top_k, s);
      candidate_weights(s, r.top_k, r.temperature, prob);
      if (t == 0) token = cand_id(s, draw_sorted_index(prob, r.top_k, r.top_p, r.u01, 0));
    }
  } else {
    // Top-p alone: the total weight (float terms, as the host), then candidate sets of 64,
    // 256, ... until their weight reaches top_p of it, as the host grows them.
    const float mx = row_max(row, V, s);
    const float inv_t = float(1.0 / r.temperature);
    double total = 0;
    for (std::int64_t i = t; i < V; i += kThreads) total += expf((row[i] - mx) * inv_t);
    total = block_sum(total, s);
    const int n = V < kSampleMaxCandidates ? int(V) : kSampleMaxCandidates;
    select_top(row, V, n, s);
    done = 0;
    for (std::int64_t k = V < 64 ? V : 64; k <= n; k = k * 4 < V ? k * 4 : V) {
      double mass = 0;
      for (int j = t; j < k; j += kThreads)
        mass += exp(double(cand_value(s, j) - mx) / r.temperature);
      mass = block_sum(mass, s);
      if (mass >= r.top_p * total * (1 - 1e-6) || k == V) {
        candidate_weights(s, int(k), r.temperature, prob);
        if (t == 0) token = cand_id(s, draw_sorted_index(prob, int(k), r.top_p, r.u01, total));
        done = 1;
        break;
      }
    }
  }
  if (t == 0) {
    out->done = done;
    out->token = done ? token : -1;
    out->logprob = r.n_top >= 0 && done ? float(double(raw[token]) - lse) : 0.0f;
  }
}

}  // namespace

cudaError_t sample_rows(const float* logits, std::int64_t vocab, const SampleRow* rows, int count,
                        const SampleBias* biases, const SampleEdit* edits, float* work,
                        double* scratch, SampleOut* out, cudaStream_t stream) {
  if (count <= 0 || vocab <= 0 || vocab > 0x7fffffff) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(sample_kernel, unsigned(count), kThreads, 0, stream, logits, vocab, rows, biases,
               edits, work, scratch, out);
  return cudaGetLastError();
}

}  // namespace prima::cuda
