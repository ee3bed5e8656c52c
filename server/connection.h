// ConnectionServer: the httplib::Server of `prima serve`, with its own connection handling.
//
// cpp-httplib 0.11 runs each accepted connection on one worker thread for its whole life
// (process_and_close_socket, a private virtual that this class overrides; request parsing,
// routing and response writing stay httplib's protected process_request). Here instead:
//  - httplib's accept loop hands each new connection to a ConnReactor (conn_reactor.h), which
//    holds it while it is idle or its request is still arriving; a worker thread takes it only
//    when a whole request is buffered, and gives it back after the answer. Slow or idle
//    clients hold no worker; header, body and idle deadlines close them; size limits (413 for
//    chunked bodies too, 431 for headers) hold before anything is parsed;
//  - beyond max_connections open connections, a new one is answered 503 and closed at once
//    (it never waits behind accepted work); the process's open-file limit is raised to its
//    hard limit and bounds max_connections;
//  - the connection's socket is known to the handler that runs on the worker
//    (current_connection_socket()), so a handler that waits for the engine can notice that
//    its client went away (peer_closed()) and cancel the request;
//  - the stream writes a response's head and body in one send, and is_writable() is false as
//    soon as the peer closed its side (a streaming response stops at its next chunk).
//
// Thread-safety: as httplib::Server; current_connection_socket() reads a thread_local of the
// calling worker thread.
#pragma once

#include <httplib.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "server/conn_reactor.h"

namespace prima::server {

struct ConnectionLimits {
  int worker_threads = 64;      // threads that serve whole requests
  int max_connections = 10000;  // open connections at most (also bounded by the fd limit)
  ReactorLimits reactor;
};

class ConnectionServer : public httplib::Server {
 public:
  ConnectionServer();
  ~ConnectionServer() override;

  // Before listening.
  void set_connection_limits(const ConnectionLimits& lim);
  // The JSON body of an error answered before any handler runs (framing errors, deadlines, the
  // connection cap), in the style of the API at `path`. Default: {"error": message}.
  std::function<std::string(int status, const std::string& path, const std::string& message)>
      error_body;

  // Raises the listening socket's accept queue (httplib listens with a backlog of 5, so a
  // burst of hundreds of connections overflows it: the kernel drops handshakes and clients see
  // resets). Call after binding. False when the socket refused.
  bool set_listen_backlog(int n);
  // Connections open now (held by the reactor or served by a worker).
  int open_connections() const { return open_.load(); }
  // The connection cap in force (max_connections bounded by the open-file limit).
  int max_connections() const { return cap_; }

 private:
  class Queue;
  bool process_and_close_socket(socket_t sock) override;
  void start_workers();
  void stop_workers();
  void serve(std::unique_ptr<PendingConn> c);
  std::string error_response(int status, const std::string& path, const std::string& message) const;

  ConnectionLimits lim_;
  int cap_ = 0;
  std::mutex workers_mu_;  // stop_workers may run on the listening thread and the destructor
  std::unique_ptr<ConnReactor> reactor_;
  std::unique_ptr<httplib::ThreadPool> pool_;
  std::atomic<int> open_{0};
};

// The socket of the connection the calling HTTP worker thread is serving; INVALID_SOCKET
// outside a ConnectionServer connection.
socket_t current_connection_socket();

// True when the peer of `sock` closed the connection (or it failed): an orderly shutdown
// (FIN), a reset or an error. Bytes the client sent ahead (a pipelined request) are not a
// close. Does not block. A client that half-closes (shuts down its sending side) while it still
// waits for the answer counts as gone, as it does for most HTTP servers.
bool peer_closed(socket_t sock);

}  // namespace prima::server
