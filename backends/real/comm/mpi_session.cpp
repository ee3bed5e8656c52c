// MPI bootstrap for the process (see mpi_session.h). Single-threaded use.
#include "backends/real/comm/mpi_session.h"

#include <cstdio>
#include <cstdlib>

namespace prima::real::comm {

Status mpi_init_once() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) return failed_precondition("MPI was already finalized in this process");
  if (initialized) return ok_status();
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  if (rc != MPI_SUCCESS) return unavailable(mpi_error_string("MPI_Init_thread", rc));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return ok_status();
}

void mpi_finalize_once() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

void mpi_abort_job(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  std::fflush(stdout);
  std::fflush(stderr);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

std::string mpi_error_string(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  return std::string(call) + ": " +
         (len > 0 ? std::string(text, len) : "MPI error " + std::to_string(code));
}

}  // namespace prima::real::comm
