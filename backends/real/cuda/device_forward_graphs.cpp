// DeviceForward's decode graphs (device_forward.h): a single rank's decode step (every sequence
// computes one token and samples, no prompt scoring, at most 64 sequences) is padded to its
// bucket (1, 2, 4, ..., 64 rows) and its kernels, from the embedding to the LM head, replayed
// as one CUDA graph: one launch instead of 17 per layer, the host's launch overhead gone.
// A bucket's first step runs without a graph and sizes every buffer; the second captures the
// graph (stream capture of the same calls), and later ones replay it. The step's inputs go to
// the same buffers before each launch; padded rows compute token 0 at position 0 in the spare
// KV block and are not read. The attention reads each row's context length from the device and
// a bucket always has one tile per row, so its launch arguments do not change with the step; the
// block tables' buffer is sized for the longest context (graph_ctx_). A graph whose buffers have
// moved since its capture (a larger eager step grew one) is captured again. PRIMA_DEVICE_GRAPHS=0
// turns graphs off.
#include <cstdlib>
#include <numeric>
#include <string>

#include "backends/real/cuda/device_forward.h"

namespace prima::real::cuda {

namespace {

constexpr int kMaxBucket = 64;

int bucket_of(int seqs) {
  int b = 1;
  while (b < seqs) b *= 2;
  return b;
}

bool graphs_enabled() {
  const char* e = std::getenv("PRIMA_DEVICE_GRAPHS");
  return !(e && std::string(e) == "0");
}

}  // namespace

bool DeviceForward::graphable(const StepInput& s) const {
  if (par_.layout.tp != 1 || par_.layout.pp != 1 || s.seqs.empty() ||
      s.seqs.size() > std::size_t(kMaxBucket) || !graphs_enabled())
    return false;
  for (const SeqInput& q : s.seqs)
    if (q.tokens.size() != 1 || !q.samples || !q.score_ids.empty()) return false;
  return true;
}

std::vector<const void*> DeviceForward::graph_buffers() const {
  std::vector<const void*> v;
  for (const DeviceBuffer* b :
       {&ids_, &pos_,   &slots_,  &table_off_, &ctx_,    &tables_, &rows_, &x_,
        &h_,   &q_,     &k_,      &v_,         &att_,    &o_,      &g_,    &u_,
        &xq_,  &tiles_, &logits_, &amax_,      &xscale_, &acc_})
    v.push_back(b->as<const void>());
  return v;
}

Status DeviceForward::run_graph(const StepInput& s, std::vector<float>* logits,
                                std::vector<DeviceRow>* done) {
  const int n = int(s.seqs.size()), B = bucket_of(n);
  PRIMA_RETURN_IF_ERROR(upload_step(s, B));
  std::vector<std::int64_t> rows(static_cast<std::size_t>(B), 0);
  std::iota(rows.begin(), rows.end(), std::int64_t{0});
  if (!warm_.count(B)) {  // the first step of this bucket: no graph yet, every buffer sized
    PRIMA_RETURN_IF_ERROR(reserve(B));
    PRIMA_RETURN_IF_ERROR(body(B));
    PRIMA_RETURN_IF_ERROR(lm_head(rows));
    warm_.insert(B);
    return copy_out(s, n, logits, done);
  }
  auto it = graphs_.find(B);
  if (it != graphs_.end() && it->second.buffers != graph_buffers()) {
    cudaGraphExecDestroy(it->second.exec);
    graphs_.erase(it);
    it = graphs_.end();
  }
  if (it == graphs_.end()) {  // the warm step sized every buffer: nothing moves in the capture
    PRIMA_CUDA_OK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
                  "cudaStreamBeginCapture");
    Status st = body(B);
    if (st.ok()) st = lm_head(rows);
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
    PRIMA_RETURN_IF_ERROR(st);
    PRIMA_CUDA_OK(end, "cudaStreamEndCapture");
    Graph g;
    std::size_t nodes = 0;  // a figure for tests and profiles, not needed to run the graph
    graph_nodes_ =
        cudaGraphGetNodes(graph, nullptr, &nodes) == cudaSuccess ? std::int64_t(nodes) : 0;
    const cudaError_t inst = cudaGraphInstantiate(&g.exec, graph, 0);
    cudaGraphDestroy(graph);
    PRIMA_CUDA_OK(inst, "cudaGraphInstantiate (decode bucket " + std::to_string(B) + ")");
    g.buffers = graph_buffers();
    it = graphs_.emplace(B, std::move(g)).first;
    ++graph_captures_;
  }
  PRIMA_CUDA_OK(cudaGraphLaunch(it->second.exec, stream_),
                "cudaGraphLaunch (decode bucket " + std::to_string(B) + ")");
  ++graph_launches_;
  return copy_out(s, n, logits, done);
}

}  // namespace prima::real::cuda
