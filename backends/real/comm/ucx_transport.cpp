// UCX transport (see ucx_transport.h). Single-threaded: the calling thread progresses the
// worker. Several transports may live in one process (one per replica and relay), each with
// its own context and worker, each driven by its own thread. Teardown: flush the worker, barrier
// (progressing), close every endpoint in flush mode, barrier again, destroy worker and context;
// MPI_Finalize is done by the caller.
#include "backends/real/comm/ucx_transport.h"

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <thread>

#include "backends/real/comm/mpi_session.h"

namespace prima::real::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Idle time spent spinning on the worker before yielding the CPU: spinning keeps latency low
// (yielding at once put a 1 MiB ping-pong at ~1.5 ms instead of ~0.2 ms on a loaded 2-core
// machine); yielding after it lets ranks that share cores (mpirun --oversubscribe) run.
constexpr std::chrono::microseconds kSpinBeforeYield{1000};

std::uint64_t encode(int source, const Tag& t) {
  return (static_cast<std::uint64_t>(source) << 48) |
         (static_cast<std::uint64_t>(t.ctx & (kMaxContexts - 1)) << 33) |
         (static_cast<std::uint64_t>(t.internal ? 1 : 0) << 32) | t.value;
}

std::string ucs_error(const char* call, ucs_status_t st) {
  return std::string(call) + ": " + ucs_status_string(st);
}

class UcxTransport final : public Transport {
 public:
  UcxTransport(double timeout_s, MPI_Comm comm, bool owns_comm)
      : timeout_s_(timeout_s), comm_(comm), owns_comm_(owns_comm) {}
  ~UcxTransport() override {
    shutdown();
    if (owns_comm_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  Status init() {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (size_ > kMaxWorldSize)
      return invalid_argument("ucx transport: world of " + std::to_string(size_) +
                              " ranks exceeds " + std::to_string(kMaxWorldSize));
    ucp_config_t* config = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
    if (st != UCS_OK) return unavailable(ucs_error("ucp_config_read", st));
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG;
    params.estimated_num_eps = static_cast<std::size_t>(size_);
    st = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (st != UCS_OK) return unavailable(ucs_error("ucp_init", st));
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(context_, &wp, &worker_);
    if (st != UCS_OK) return unavailable(ucs_error("ucp_worker_create", st));

    // Exchange worker addresses.
    ucp_address_t* address = nullptr;
    std::size_t address_len = 0;
    st = ucp_worker_get_address(worker_, &address, &address_len);
    if (st != UCS_OK) return unavailable(ucs_error("ucp_worker_get_address", st));
    std::vector<int> lens(size_), offsets(size_);
    int my_len = static_cast<int>(address_len);
    int rc = MPI_Allgather(&my_len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_);
    if (rc != MPI_SUCCESS) {
      ucp_worker_release_address(worker_, address);
      return unavailable(mpi_error_string("MPI_Allgather (UCX address lengths)", rc));
    }
    int total = 0;
    for (int r = 0; r < size_; ++r) offsets[r] = total, total += lens[r];
    std::vector<char> all(static_cast<std::size_t>(total));
    rc = MPI_Allgatherv(address, my_len, MPI_BYTE, all.data(), lens.data(), offsets.data(),
                        MPI_BYTE, comm_);
    ucp_worker_release_address(worker_, address);
    if (rc != MPI_SUCCESS)
      return unavailable(mpi_error_string("MPI_Allgatherv (UCX addresses)", rc));

    eps_.assign(size_, nullptr);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      ucp_ep_params_t ep{};
      ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
      ep.address = reinterpret_cast<const ucp_address_t*>(all.data() + offsets[r]);
      ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;  // PEER mode would disable shared memory
      st = ucp_ep_create(worker_, &ep, &eps_[r]);
      if (st != UCS_OK)
        return unavailable(ucs_error(("ucp_ep_create to rank " + std::to_string(r)).c_str(), st));
    }
    return ok_status();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "ucx"; }

  Status run(Op* ops, std::size_t count) override {
    std::vector<void*> reqs(count, nullptr);
    std::vector<ucp_tag_recv_info_t> infos(count);
    std::vector<bool> done(count, false);
    Status first_error;
    auto fail = [&](std::size_t i, const std::string& why) {
      if (first_error.ok()) first_error = unavailable(describe(ops[i]) + " over ucx: " + why);
      done[i] = true;
    };
    auto check_recv = [&](std::size_t i, ucs_status_t st, const ucp_tag_recv_info_t& info) {
      if (st == UCS_ERR_MESSAGE_TRUNCATED) return fail(i, "message larger than expected");
      if (st != UCS_OK) return fail(i, ucs_status_string(st));
      if (info.length != ops[i].n)
        return fail(i, "message of " + std::to_string(info.length) + " bytes, expected " +
                           std::to_string(ops[i].n) + " (sender tag " +
                           std::to_string(info.sender_tag) + ")");
      done[i] = true;
    };
    static char dummy = 0;
    for (std::size_t i = 0; i < count; ++i) {
      Op& op = ops[i];
      void* buf = op.data ? op.data : &dummy;
      if (op.peer < 0 || op.peer >= size_ || op.peer == rank_) {
        fail(i, "bad peer");
        continue;
      }
      if (op.kind == Op::Kind::kSend) {
        ucp_request_param_t prm{};
        ucs_status_ptr_t r =
            ucp_tag_send_nbx(eps_[op.peer], buf, op.n, encode(rank_, op.tag), &prm);
        if (r == nullptr)
          done[i] = true;
        else if (UCS_PTR_IS_ERR(r))
          fail(i, ucs_status_string(UCS_PTR_STATUS(r)));
        else
          reqs[i] = r;
      } else {
        ucp_request_param_t prm{};
        // Always a request: the length of an immediately completed recv is not reliable
        // through recv_info in UCX 1.13 (seen as 0), ucp_tag_recv_request_test gives it.
        prm.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        ucs_status_ptr_t r =
            ucp_tag_recv_nbx(worker_, buf, op.n, encode(op.peer, op.tag), ~0ull, &prm);
        if (r == nullptr)
          check_recv(i, UCS_OK, infos[i]);
        else if (UCS_PTR_IS_ERR(r))
          fail(i, ucs_status_string(UCS_PTR_STATUS(r)));
        else
          reqs[i] = r;
      }
    }
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s_));
    std::size_t idle = 0, iterations = 0;
    Clock::time_point idle_start;
    for (;;) {
      bool pending = false;
      for (std::size_t i = 0; i < count; ++i) {
        if (done[i] || reqs[i] == nullptr) continue;
        ucs_status_t st;
        if (ops[i].kind == Op::Kind::kRecv) {
          st = ucp_tag_recv_request_test(reqs[i], &infos[i]);
          if (st == UCS_INPROGRESS) {
            pending = true;
            continue;
          }
          check_recv(i, st, infos[i]);
        } else {
          st = ucp_request_check_status(reqs[i]);
          if (st == UCS_INPROGRESS) {
            pending = true;
            continue;
          }
          if (st != UCS_OK) fail(i, ucs_status_string(st));
          done[i] = true;
        }
        ucp_request_free(reqs[i]);
        reqs[i] = nullptr;
      }
      if (!pending) break;
      const unsigned progressed = ucp_worker_progress(worker_);
      if (++iterations % 4096 == 0 && Clock::now() > deadline) break;
      if (progressed != 0) {
        idle = 0;
      } else if (++idle % 1024 == 0) {
        const auto now = Clock::now();
        if (now > deadline) break;
        if (idle == 1024)
          idle_start = now;
        else if (now - idle_start > kSpinBeforeYield)
          std::this_thread::yield();
      }
    }
    // Timed out: cancel what is still pending, name the first one.
    for (std::size_t i = 0; i < count; ++i) {
      if (reqs[i] == nullptr) continue;
      if (first_error.ok())
        first_error =
            Status(StatusCode::kDeadlineExceeded,
                   describe(ops[i]) + " over ucx timed out after " + seconds_text(timeout_s_) +
                       " s (peer rank " + std::to_string(ops[i].peer) + " not responding)");
      if (ops[i].kind == Op::Kind::kRecv) {
        ucp_request_cancel(worker_, reqs[i]);
        for (int k = 0; k < 100000 && ucp_request_check_status(reqs[i]) == UCS_INPROGRESS; ++k)
          ucp_worker_progress(worker_);
      }
      ucp_request_free(reqs[i]);  // a send still in flight is released when it completes
    }
    return first_error;
  }

 private:
  // Waits for a UCX request while progressing; false on timeout.
  bool wait_request(ucs_status_ptr_t r, Clock::time_point deadline) {
    if (r == nullptr || UCS_PTR_IS_ERR(r)) return true;
    while (ucp_request_check_status(r) == UCS_INPROGRESS) {
      if (ucp_worker_progress(worker_) == 0 && Clock::now() > deadline) {
        ucp_request_free(r);
        return false;
      }
    }
    ucp_request_free(r);
    return true;
  }

  // A barrier over MPI that keeps the UCX worker progressing (peers may be flushing to us).
  bool progressing_barrier(Clock::time_point deadline) {
    MPI_Request req;
    if (MPI_Ibarrier(comm_, &req) != MPI_SUCCESS) return false;
    int flag = 0;
    while (!flag) {
      if (MPI_Test(&req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
      if (!flag && ucp_worker_progress(worker_) == 0) {
        if (Clock::now() > deadline) return false;  // request leaks; MPI_Finalize follows
        std::this_thread::yield();
      }
    }
    return true;
  }

  void shutdown() {
    if (worker_ == nullptr) {
      if (context_ != nullptr) ucp_cleanup(context_);
      context_ = nullptr;
      return;
    }
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s_));
    ucp_request_param_t prm{};
    bool graceful = wait_request(ucp_worker_flush_nbx(worker_, &prm), deadline);
    graceful = progressing_barrier(deadline) && graceful;
    std::vector<ucs_status_ptr_t> closing;
    for (ucp_ep_h ep : eps_) {
      if (ep == nullptr) continue;
      ucp_request_param_t cp{};
      cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      cp.flags = graceful ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
      closing.push_back(ucp_ep_close_nbx(ep, &cp));
    }
    for (ucs_status_ptr_t r : closing) wait_request(r, deadline);
    if (graceful) progressing_barrier(deadline);
    eps_.clear();
    ucp_worker_destroy(worker_);
    worker_ = nullptr;
    ucp_cleanup(context_);
    context_ = nullptr;
  }

  double timeout_s_;
  MPI_Comm comm_;
  bool owns_comm_;
  int rank_ = 0, size_ = 1;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<ucp_ep_h> eps_;
};

}  // namespace

Result<std::unique_ptr<Transport>> make_ucx_transport(double timeout_s, MPI_Comm comm,
                                                      bool owns_comm) {
  auto t = std::make_unique<UcxTransport>(timeout_s, comm, owns_comm);
  PRIMA_RETURN_IF_ERROR(t->init());
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace prima::real::comm
