// RealBackend::open: the model file, the tokenizer, the world communicator (TP x PP ranks),
// this rank's weight shard, its KV store and (leader) the executor. See real_backend.h.
// open() runs on the main thread; afterwards the leader's executor worker thread (or, on other
// ranks, the thread calling run_worker) is the only user of the communicators and kernels.
#include "backends/real/real_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "backends/real/comm/communicator.h"
#include "backends/real/gguf.h"
#include "backends/real/kv_store.h"
#include "backends/real/llama_weights.h"
#include "backends/real/rank_runner.h"
#include "backends/real/real_executor.h"
#include "backends/real/replica_relay.h"
#include "backends/real/synthetic_model.h"
#include "backends/real/tokenizer.h"

namespace prima::real {

namespace {

class RealBackendImpl : public RealBackend {
 public:
  ~RealBackendImpl() override {
    shutdown();
    executors_.clear();
    relay_runners_.clear();
    runner_.reset();
    tp_group_.reset();
    // The replica's transport before the relays' (its leader's teardown waits only for the
    // replica's ranks, then job rank 0 waits for the leader on the relay: no cycle).
    world_.reset();
    relays_.clear();
  }

  bool is_leader() const override { return job_rank_ == 0; }
  int replicas() const override { return replicas_; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  const GgufFile& file() const override { return *file_; }
  const model::ModelSpec& model_spec() const override { return spec_; }
  int context_length() const override { return config_.context_length; }
  int num_kv_blocks() const override { return kv_->num_blocks(); }
  int block_size() const override { return kv_->block_size(); }
  bool repacked() const override { return weights_->repacked(); }

  Executor* executor(Runtime* rt, int replica) override {
    if (!is_leader() || replica < 0 || replica >= replicas_) return nullptr;
    auto& e = executors_[static_cast<std::size_t>(replica)];
    if (!e) {
      StepRunner* runner = replica == 0 ? static_cast<StepRunner*>(runner_.get())
                                        : relay_runners_[static_cast<std::size_t>(replica)].get();
      e = std::make_unique<RealExecutor>(rt, runner, kv_->block_size(), layout_.pp, &spec_);
    }
    return e.get();
  }

  Status run_worker() override {
    if (is_leader()) return invalid_argument("run_worker called on the leader (job rank 0)");
    if (layout_.rank == 0) return serve_relay(runner_.get(), relays_.at(0).get());
    return runner_->run_worker(/*keep_going=*/replicas_ > 1);
  }

  std::vector<std::uint64_t> bytes_sent() const override {
    return job_counts([](const Communicator& c) { return c.bytes_sent(); });
  }
  std::vector<std::uint64_t> bytes_received() const override {
    return job_counts([](const Communicator& c) { return c.bytes_received(); });
  }
  Status failure(int replica) const override {
    if (replica < 0 || replica >= static_cast<int>(executors_.size())) return ok_status();
    const auto& e = executors_[static_cast<std::size_t>(replica)];
    return e ? e->failure() : ok_status();
  }

  void shutdown() override {
    if (!is_leader() || !runner_) return;
    for (auto& e : executors_)
      if (e) e->stop();
    runner_->shutdown();
    for (int r = 1; r < replicas_; ++r)
      if (failure(r).ok()) relay_runners_[static_cast<std::size_t>(r)]->shutdown();
  }

  Status init(const RealBackendOptions& o);

 private:
  // Counts by job rank: this replica's ranks (job rank 0's replica is job ranks 0..k-1) and,
  // on job rank 0, each relay's far end (replica r's leader, job rank r * k).
  template <typename Read>
  std::vector<std::uint64_t> job_counts(Read read) const {
    std::vector<std::uint64_t> out(static_cast<std::size_t>(job_size_), 0);
    const auto own = read(*world_);
    for (std::size_t i = 0; i < own.size() && i < out.size(); ++i) out[i] = own[i];
    for (std::size_t r = 1; r < relays_.size(); ++r) {
      if (!relays_[r]) continue;
      const auto far = read(*relays_[r]);
      if (far.size() > 1) out[r * static_cast<std::size_t>(layout_.tp * layout_.pp)] += far[1];
    }
    return out;
  }

  int job_rank_ = 0, job_size_ = 1, replicas_ = 1;
  RankLayout layout_;
  LlamaConfig config_;
  model::ModelSpec spec_;
  std::unique_ptr<Communicator> world_, tp_group_;     // world_: this replica's ranks
  std::vector<std::unique_ptr<Communicator>> relays_;  // JobComms::relays
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<LlamaWeights> weights_;
  std::unique_ptr<KvStore> kv_;
  std::unique_ptr<kernels::ThreadPool> pool_;
  std::unique_ptr<StepForward> device_;  // the GPU forward pass, when asked for
  std::unique_ptr<RankRunner> runner_;
  std::vector<std::unique_ptr<RelayRunner>> relay_runners_;  // job rank 0: [r] for r >= 1
  std::vector<std::unique_ptr<RealExecutor>> executors_;     // job rank 0: one per replica
};

Status RealBackendImpl::init(const RealBackendOptions& o) {
  if (o.tp < 1 || o.pp < 1)
    return invalid_argument("--tp and --pp must be >= 1 (got " + std::to_string(o.tp) + " and " +
                            std::to_string(o.pp) + ")");
  if (o.block_size < 1) return invalid_argument("KV block size must be >= 1");
  if (o.max_num_seqs < 1) return invalid_argument("max_num_seqs must be >= 1");
  if (!(o.comm_timeout_s > 0))
    return invalid_argument(fmt::format("--comm-timeout must be > 0, got {:g}", o.comm_timeout_s));
  CommOptions co;
  co.timeout_s = o.comm_timeout_s;
  PRIMA_ASSIGN_OR_RETURN(JobComms jc,
                         make_job_communicators(co, o.replicas, relay_timeout_s(o.comm_timeout_s)));
  const int want = o.replicas * o.tp * o.pp;
  if (jc.job_size != want)
    return invalid_argument(
        (o.replicas > 1 ? "--replicas " + std::to_string(o.replicas) + " x " : std::string()) +
        "--tp " + std::to_string(o.tp) + " x --pp " + std::to_string(o.pp) + " = " +
        std::to_string(want) + " ranks, but " + std::to_string(jc.job_size) +
        " processes were launched (mpirun -np must equal " + (o.replicas > 1 ? "replicas x " : "") +
        "tp x pp)");
  world_ = std::move(jc.replica_comm);
  relays_ = std::move(jc.relays);
  job_rank_ = jc.job_rank;
  job_size_ = jc.job_size;
  replicas_ = o.replicas;
  layout_ = {o.tp, o.pp, world_->rank()};

  GgufOpenOptions go;
  go.manifest = o.manifest;
  PRIMA_ASSIGN_OR_RETURN(file_, GgufFile::open(o.model_path, go));
  PRIMA_ASSIGN_OR_RETURN(config_, read_llama_config(*file_));
  if (!o.device_forward) PRIMA_RETURN_IF_ERROR(check_host_weights(*file_));
  PRIMA_RETURN_IF_ERROR(check_tp(config_, *file_, o.tp));
  if (o.pp > config_.layers)
    return invalid_argument("--pp " + std::to_string(o.pp) + " exceeds the model's " +
                            std::to_string(config_.layers) + " layers");
  PRIMA_ASSIGN_OR_RETURN(VocabData vocab, vocab_from_gguf(*file_));
  PRIMA_ASSIGN_OR_RETURN(tokenizer_, Tokenizer::create(std::move(vocab)));

  ShardSpec sh;
  sh.tp = o.tp;
  sh.tp_rank = layout_.tp_rank();
  std::tie(sh.layer_begin, sh.layer_end) = stage_layers(config_.layers, o.pp, layout_.stage());
  sh.embed = layout_.first_stage();
  sh.head = layout_.last_stage();
  PRIMA_ASSIGN_OR_RETURN(weights_, LlamaWeights::bind(*file_, config_, sh, o.repack));

  // KV blocks: the same number on every rank (sized for the largest stage).
  const std::int64_t need = default_kv_blocks(o, config_.context_length);
  const int stage_layers_max = (config_.layers + o.pp - 1) / o.pp;
  const double per_block =
      stage_layers_max *
      KvStore::block_bytes(o.block_size, config_.kv_heads / o.tp, config_.head_dim);
  std::int64_t blocks = need;
  if (o.kv_cache_bytes > 0)
    blocks =
        std::max<std::int64_t>(blocks, static_cast<std::int64_t>(o.kv_cache_bytes / per_block));
  if (blocks > (std::int64_t(1) << 30))
    return invalid_argument("KV cache of " + std::to_string(blocks) + " blocks is too large");
  kv_ = std::make_unique<KvStore>(weights_->num_layers(), static_cast<int>(blocks), o.block_size,
                                  config_.kv_heads / o.tp, config_.head_dim);

  if (o.tp > 1) {
    std::vector<int> ranks;
    for (int t = 0; t < o.tp; ++t) ranks.push_back(layout_.rank_of(layout_.stage(), t));
    PRIMA_ASSIGN_OR_RETURN(tp_group_, world_->group(ranks));
  }
  int threads = o.threads;
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  pool_ = std::make_unique<kernels::ThreadPool>(threads);
  runner_ = std::make_unique<RankRunner>(layout_, world_.get(), tp_group_.get(), weights_.get(),
                                         kv_.get(), pool_.get());
  if (o.device_forward) {
    const RankJob job{layout_, world_.get(), tp_group_.get()};
    PRIMA_ASSIGN_OR_RETURN(device_,
                           o.device_forward(*weights_, kv_->num_blocks(), o.block_size, job));
    runner_->use_forward(device_.get());
    fmt::print(stderr, "prima: the forward pass runs on {}\n", device_->device());
  }
  if (is_leader()) {
    executors_.resize(static_cast<std::size_t>(replicas_));
    relay_runners_.resize(static_cast<std::size_t>(replicas_));
    const int k = o.tp * o.pp;  // ranks per replica
    for (int r = 1; r < replicas_; ++r)
      relay_runners_[static_cast<std::size_t>(r)] =
          std::make_unique<RelayRunner>(relays_.at(static_cast<std::size_t>(r)).get(), r, r * k, k);
  }

  spec_ = model_spec_of(*file_, config_);
  return ok_status();
}

}  // namespace

double relay_timeout_s(double comm_timeout_s) {
  return 3 * comm_timeout_s;
}

Status RealBackend::any_failure() const {
  for (int r = 0; r < replicas(); ++r)
    if (Status st = failure(r); !st.ok()) return st;
  return ok_status();
}

Status RealBackend::all_failed() const {
  Status last;
  for (int r = 0; r < replicas(); ++r) {
    last = failure(r);
    if (last.ok()) return last;
  }
  return last;
}

std::int64_t default_kv_blocks(const RealBackendOptions& o, int context_length) {
  const int max_len =
      o.max_model_len > 0 ? std::min(o.max_model_len, context_length) : context_length;
  return std::int64_t(o.max_num_seqs) * ((max_len + o.block_size - 1) / o.block_size);
}

Result<std::unique_ptr<RealBackend>> RealBackend::open(const RealBackendOptions& opts) {
  auto b = std::make_unique<RealBackendImpl>();
  PRIMA_RETURN_IF_ERROR(b->init(opts));
  return std::unique_ptr<RealBackend>(std::move(b));
}

}  // namespace prima::real
