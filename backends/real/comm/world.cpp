// The world communicator: size 1 without mpirun, else MPI bootstrap + the chosen transport
// (see communicator.h). make_world_communicator is called once per process from the thread
// that will drive the communicator.
#include <cstdlib>

#include "backends/real/comm/communicator.h"
#include "backends/real/comm/group_communicator.h"
#include "backends/real/comm/mpi_session.h"
#include "backends/real/comm/mpi_transport.h"
#include "backends/real/comm/ucx_transport.h"

namespace prima::real {
namespace {

// The transport of a size-1 world: there is no peer to message (the communicators reject
// messages to their own rank before reaching the transport).
class SelfTransport final : public comm::Transport {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* name() const override { return "self"; }
  Status run(comm::Op* ops, std::size_t count) override {
    if (count == 0) return ok_status();
    return invalid_argument(comm::describe(ops[0]) +
                            ": a size-1 communicator (not launched by mpirun) has no peers");
  }
};

bool g_mpi_world_made = false;

}  // namespace

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

Result<std::unique_ptr<Communicator>> make_world_communicator(const CommOptions& opts) {
  if (opts.transport != "ucx" && opts.transport != "mpi")
    return invalid_argument("CommOptions.transport: '" + opts.transport +
                            "' is not one of ucx, mpi");
  if (!(opts.timeout_s > 0))
    return invalid_argument("CommOptions.timeout_s: " + std::to_string(opts.timeout_s) +
                            " must be > 0");
  if (!launched_by_mpi()) {
    auto t = std::make_shared<SelfTransport>();
    return std::unique_ptr<Communicator>(
        std::make_unique<comm::GroupCommunicator>(std::move(t), std::vector<int>{0}, 0));
  }
  if (g_mpi_world_made)
    return failed_precondition(
        "make_world_communicator: the MPI world communicator was already made in this process");
  PRIMA_RETURN_IF_ERROR(comm::mpi_init_once());
  Result<std::unique_ptr<comm::Transport>> made = opts.transport == "mpi"
                                                      ? comm::make_mpi_transport(opts.timeout_s)
                                                      : comm::make_ucx_transport(opts.timeout_s);
  if (!made.ok()) {
    comm::mpi_finalize_once();
    return Status(made.status().code(),
                  "make_world_communicator (" + opts.transport + "): " + made.status().message());
  }
  g_mpi_world_made = true;
  // The last owner (the world or a group outliving it) tears down the transport, then MPI.
  std::shared_ptr<comm::Transport> transport(made.value().release(), [](comm::Transport* t) {
    delete t;
    comm::mpi_finalize_once();
  });
  std::vector<int> ranks(static_cast<std::size_t>(transport->size()));
  for (int r = 0; r < transport->size(); ++r) ranks[r] = r;
  return std::unique_ptr<Communicator>(
      std::make_unique<comm::GroupCommunicator>(std::move(transport), std::move(ranks), 0));
}

void abort_job(int code) {
  comm::mpi_abort_job(code);
}

}  // namespace prima::real
