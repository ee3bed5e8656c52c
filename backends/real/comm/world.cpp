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

// Held by every transport of a job: the last one to go finalizes MPI.
struct MpiSession {
  ~MpiSession() { comm::mpi_finalize_once(); }
};

// A communicator over all the ranks of `t`, which keeps `session` alive as long as it lives.
std::unique_ptr<Communicator> communicator_over(std::unique_ptr<comm::Transport> t,
                                                std::shared_ptr<MpiSession> session) {
  std::shared_ptr<comm::Transport> transport(t.release(), [session](comm::Transport* p) {
    delete p;  // before the session (and MPI_Finalize) goes
  });
  std::vector<int> ranks(static_cast<std::size_t>(transport->size()));
  for (int r = 0; r < transport->size(); ++r) ranks[r] = r;
  return std::make_unique<comm::GroupCommunicator>(std::move(transport), std::move(ranks), 0);
}

Status check_options(const CommOptions& opts) {
  if (opts.transport != "ucx" && opts.transport != "mpi")
    return invalid_argument("CommOptions.transport: '" + opts.transport +
                            "' is not one of ucx, mpi");
  if (!(opts.timeout_s > 0))
    return invalid_argument("CommOptions.timeout_s: " + std::to_string(opts.timeout_s) +
                            " must be > 0");
  return ok_status();
}

}  // namespace

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

Result<std::unique_ptr<Communicator>> make_world_communicator(const CommOptions& opts) {
  PRIMA_RETURN_IF_ERROR(check_options(opts));
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
  return communicator_over(std::move(made).value(), std::make_shared<MpiSession>());
}

Result<JobComms> make_job_communicators(const CommOptions& opts, int replicas,
                                        double relay_timeout_s) {
  PRIMA_RETURN_IF_ERROR(check_options(opts));
  if (replicas < 1)
    return invalid_argument("--replicas must be >= 1 (got " + std::to_string(replicas) + ")");
  JobComms jc;
  if (replicas == 1) {
    PRIMA_ASSIGN_OR_RETURN(jc.replica_comm, make_world_communicator(opts));
    jc.job_rank = jc.replica_comm->rank();
    jc.job_size = jc.replica_comm->size();
    return jc;
  }
  if (!launched_by_mpi())
    return invalid_argument("--replicas " + std::to_string(replicas) +
                            ": several replicas are ranks of one mpirun job (mpirun -np must be "
                            "replicas x tp x pp); this process was not launched by mpirun");
  if (opts.transport != "ucx")
    return invalid_argument("--replicas " + std::to_string(replicas) +
                            " needs the ucx transport (each replica and relay is driven by its "
                            "own thread; the mpi transport is single-threaded)");
  if (!(relay_timeout_s > 0)) return invalid_argument("relay timeout must be > 0");
  if (g_mpi_world_made)
    return failed_precondition(
        "make_job_communicators: the MPI communicators were already made in this process");
  PRIMA_RETURN_IF_ERROR(comm::mpi_init_once());
  auto session = std::make_shared<MpiSession>();
  g_mpi_world_made = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &jc.job_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &jc.job_size);
  if (jc.job_size % replicas != 0)
    return invalid_argument("--replicas " + std::to_string(replicas) + ": the " +
                            std::to_string(jc.job_size) +
                            " processes launched do not split into equal replicas (mpirun -np "
                            "must equal replicas x tp x pp)");
  const int k = jc.job_size / replicas;  // ranks per replica
  // This replica's ranks, in job order.
  MPI_Comm replica_comm = MPI_COMM_NULL;
  int rc = MPI_Comm_split(MPI_COMM_WORLD, jc.job_rank / k, jc.job_rank, &replica_comm);
  if (rc != MPI_SUCCESS) return unavailable(comm::mpi_error_string("MPI_Comm_split", rc));
  PRIMA_ASSIGN_OR_RETURN(auto rt, comm::make_ucx_transport(opts.timeout_s, replica_comm, true));
  jc.replica_comm = communicator_over(std::move(rt), session);
  // A relay per replica r >= 1: job rank 0 and the replica's leader (job rank r * k), made in
  // order of r by job rank 0, once by each leader.
  MPI_Group world_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  if (jc.job_rank == 0)
    jc.relays.resize(static_cast<std::size_t>(replicas));
  else if (jc.job_rank % k == 0)
    jc.relays.resize(1);
  Status st;
  for (int r = 1; r < replicas && st.ok(); ++r) {
    if (jc.job_rank != 0 && jc.job_rank != r * k) continue;
    const int members[2] = {0, r * k};
    MPI_Group pair;
    MPI_Group_incl(world_group, 2, members, &pair);
    MPI_Comm relay = MPI_COMM_NULL;
    rc = MPI_Comm_create_group(MPI_COMM_WORLD, pair, r, &relay);
    MPI_Group_free(&pair);
    if (rc != MPI_SUCCESS) {
      st = unavailable(comm::mpi_error_string("MPI_Comm_create_group (relay)", rc));
      break;
    }
    auto made = comm::make_ucx_transport(relay_timeout_s, relay, true);
    if (!made.ok()) {
      st = Status(made.status().code(),
                  "relay to replica " + std::to_string(r) + ": " + made.status().message());
      break;
    }
    jc.relays[jc.job_rank == 0 ? r : 0] = communicator_over(std::move(made).value(), session);
  }
  MPI_Group_free(&world_group);
  PRIMA_RETURN_IF_ERROR(st);
  return jc;
}

void abort_job(int code) {
  comm::mpi_abort_job(code);
}

}  // namespace prima::real
