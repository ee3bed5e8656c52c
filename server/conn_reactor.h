// ConnReactor: the connections of `prima serve` while no worker thread serves them. One thread
// waits on all of them with epoll, reads what arrives without blocking, and hands a connection
// to a worker only once a whole request is buffered (request_framing.h). So a slow client
// costs a socket and a few KiB, never a worker: 1,000 clients that trickle a header line every
// few seconds leave every worker free for whole requests.
//
// Deadlines, checked every 100 ms: a new or kept-alive connection with no byte of its next
// request for idle_timeout_s is closed; a request whose headers are not all there
// header_timeout_s after its first byte, or whose body is not all there body_timeout_s after
// its headers, gets 408 and is closed. Framing errors (too large: 413/431, malformed: 400/501)
// are answered at once, before any parsing. "Expect: 100-continue" is answered when the
// headers are in and the declared body fits. A rejected connection is half-closed and drained
// for up to 2 s so that the client reads the answer rather than a reset.
//
// Thread-safety: add() and size() from any thread; the callbacks run on the reactor thread
// and must not block. Ownership: owns the connections it holds (closes them on stop()).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/request_framing.h"

namespace prima::server {

struct ReactorLimits {
  FramingLimits framing;
  double header_timeout_s = 10;  // first byte of a request -> the end of its headers
  double body_timeout_s = 30;    // the end of the headers -> the end of the body
  double idle_timeout_s = 5;     // between requests, and before a new connection's first byte
};

// A connection between requests: its socket and the bytes received of its next request(s).
struct PendingConn {
  using Clock = std::chrono::steady_clock;
  enum class Phase { kIdle, kHeaders, kBody, kClosing };
  int sock = -1;
  std::string buf;  // received, not yet served (may hold pipelined requests)
  Framing framing;  // of the request at the start of buf
  Phase phase = Phase::kIdle;
  Clock::time_point since = Clock::now();  // when the phase began
  bool sent_continue = false;
  int served = 0;  // requests answered on this connection
};

class ConnReactor {
 public:
  // A whole request is at the start of the connection's buffer: serve it (reactor thread).
  using ReadyFn = std::function<void(std::unique_ptr<PendingConn>)>;
  // The complete HTTP response (status line, headers, body) refusing a request.
  using RejectFn =
      std::function<std::string(int status, const std::string& path, const std::string& message)>;
  // A connection the reactor closed (for the owner's count of open connections).
  using ClosedFn = std::function<void()>;

  ConnReactor(ReactorLimits lim, ReadyFn ready, RejectFn reject, ClosedFn closed);
  ~ConnReactor();

  // Starts the thread; false (and *error) when epoll or eventfd cannot be had.
  bool start(std::string* error);
  // Stops the thread and closes every connection it holds. Later add()s close at once.
  void stop();
  // Takes a connection: new (empty buffer) or back from a worker after its answer.
  void add(std::unique_ptr<PendingConn> c);
  // Connections held now (not counting those with a worker).
  std::size_t size() const { return held_.load(); }

 private:
  void run();
  void take_incoming();
  void watch(std::unique_ptr<PendingConn> c);
  void on_readable(PendingConn* c);
  // Frames the buffer; hands over, rejects or keeps waiting. False when c was taken away.
  bool advance(PendingConn* c);
  void reject(PendingConn* c, int status, const std::string& message);
  void close_conn(int sock);
  void sweep();

  ReactorLimits lim_;
  ReadyFn ready_;
  RejectFn reject_;
  ClosedFn closed_;
  int epfd_ = -1, wakefd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<std::unique_ptr<PendingConn>> incoming_;           // guarded by mu_
  std::unordered_map<int, std::unique_ptr<PendingConn>> conns_;  // reactor thread only
  std::atomic<std::size_t> held_{0};
};

}  // namespace prima::server
