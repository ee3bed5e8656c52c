// MPI transport (see mpi_transport.h). Single-threaded.
#include "backends/real/comm/mpi_transport.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <map>
#include <thread>

#include "backends/real/comm/mpi_session.h"

namespace prima::real::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Polling time before yielding the CPU between polls (as in ucx_transport.cpp): low latency
// first, then room for ranks that share cores.
constexpr std::chrono::microseconds kSpinBeforeYield{1000};

struct Context {
  MPI_Comm comm = MPI_COMM_NULL;
  std::map<int, int> world_to_local;  // world rank -> rank in comm
};

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(double timeout_s) : timeout_s_(timeout_s) {}
  ~MpiTransport() override {
    for (auto& [id, c] : contexts_)
      if (c.comm != MPI_COMM_NULL && c.comm != MPI_COMM_WORLD) MPI_Comm_free(&c.comm);
  }

  Status init() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    void* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    if (!flag || *static_cast<int*>(ub) < INT_MAX)
      return unavailable("mpi transport: MPI_TAG_UB is " +
                         std::to_string(flag ? *static_cast<int*>(ub) : -1) + ", need " +
                         std::to_string(INT_MAX));
    Context world;
    world.comm = MPI_COMM_WORLD;
    for (int r = 0; r < size_; ++r) world.world_to_local[r] = r;
    contexts_[0] = std::move(world);
    return ok_status();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "mpi"; }

  Status open_context(std::uint32_t ctx, const std::vector<int>& world_ranks) override {
    MPI_Group world_group, group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, static_cast<int>(world_ranks.size()), world_ranks.data(), &group);
    Context c;
    int rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, static_cast<int>(ctx), &c.comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    if (rc != MPI_SUCCESS) return unavailable(mpi_error_string("MPI_Comm_create_group", rc));
    MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
    for (std::size_t i = 0; i < world_ranks.size(); ++i)
      c.world_to_local[world_ranks[i]] = static_cast<int>(i);
    contexts_[ctx] = std::move(c);
    return ok_status();
  }

  void close_context(std::uint32_t ctx) override {
    auto it = contexts_.find(ctx);
    if (it == contexts_.end() || ctx == 0) return;
    MPI_Comm_free(&it->second.comm);
    contexts_.erase(it);
  }

  Status run(Op* ops, std::size_t count) override {
    std::vector<MPI_Request> reqs(count, MPI_REQUEST_NULL);
    Status first_error;
    auto fail = [&](std::size_t i, const std::string& why) {
      if (first_error.ok()) first_error = unavailable(describe(ops[i]) + " over mpi: " + why);
    };
    for (std::size_t i = 0; i < count; ++i) {
      Op& op = ops[i];
      auto it = contexts_.find(op.tag.ctx);
      if (it == contexts_.end()) {
        fail(i, "context not open");
        continue;
      }
      auto local = it->second.world_to_local.find(op.peer);
      if (local == it->second.world_to_local.end() || op.peer == rank_) {
        fail(i, "peer not in the context");
        continue;
      }
      if (op.n > static_cast<std::size_t>(INT_MAX)) {
        fail(i, "message over 2 GiB");
        continue;
      }
      const int tag = static_cast<int>(op.tag.value + (op.tag.internal ? kMaxTagValue : 0));
      const int n = static_cast<int>(op.n);
      int rc = op.kind == Op::Kind::kSend
                   ? MPI_Isend(op.data, n, MPI_BYTE, local->second, tag, it->second.comm, &reqs[i])
                   : MPI_Irecv(op.data, n, MPI_BYTE, local->second, tag, it->second.comm, &reqs[i]);
      if (rc != MPI_SUCCESS) fail(i, mpi_error_string("MPI_Isend/Irecv", rc));
    }
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s_));
    std::size_t iterations = 0;
    Clock::time_point spin_start;
    for (;;) {
      bool pending = false;
      for (std::size_t i = 0; i < count; ++i) {
        if (reqs[i] == MPI_REQUEST_NULL) continue;
        int flag = 0;
        MPI_Status status;
        int rc = MPI_Test(&reqs[i], &flag, &status);
        if (rc != MPI_SUCCESS) {
          int cls = 0;
          MPI_Error_class(rc, &cls);
          fail(i, cls == MPI_ERR_TRUNCATE ? "message larger than expected"
                                          : mpi_error_string("MPI_Test", rc));
          reqs[i] = MPI_REQUEST_NULL;
          continue;
        }
        if (!flag) {
          pending = true;
          continue;
        }
        if (ops[i].kind == Op::Kind::kRecv) {
          int got = 0;
          MPI_Get_count(&status, MPI_BYTE, &got);
          if (static_cast<std::size_t>(got) != ops[i].n)
            fail(i, "message of " + std::to_string(got) + " bytes, expected " +
                        std::to_string(ops[i].n));
        }
      }
      if (!pending) break;
      if (++iterations % 256 == 0) {
        const auto now = Clock::now();
        if (now > deadline) break;
        if (iterations == 256)
          spin_start = now;
        else if (now - spin_start > kSpinBeforeYield)
          std::this_thread::yield();
      }
    }
    for (std::size_t i = 0; i < count; ++i) {
      if (reqs[i] == MPI_REQUEST_NULL) continue;
      if (first_error.ok())
        first_error =
            Status(StatusCode::kDeadlineExceeded,
                   describe(ops[i]) + " over mpi timed out after " + seconds_text(timeout_s_) +
                       " s (peer rank " + std::to_string(ops[i].peer) + " not responding)");
      if (ops[i].kind == Op::Kind::kRecv) {
        MPI_Cancel(&reqs[i]);
        MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
      } else {
        MPI_Request_free(&reqs[i]);
      }
    }
    return first_error;
  }

 private:
  double timeout_s_;
  int rank_ = 0, size_ = 1;
  std::map<std::uint32_t, Context> contexts_;
};

}  // namespace

Result<std::unique_ptr<Transport>> make_mpi_transport(double timeout_s) {
  auto t = std::make_unique<MpiTransport>(timeout_s);
  PRIMA_RETURN_IF_ERROR(t->init());
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace prima::real::comm
