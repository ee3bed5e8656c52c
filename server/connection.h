// ConnectionServer: the httplib::Server of `prima serve`, with its own per-connection loop.
//
// cpp-httplib 0.11 runs each accepted connection on one worker thread (process_and_close_socket,
// a private virtual that this class overrides; the request parsing, routing and response
// writing stay httplib's protected process_request). What this loop changes:
//  - the connection's socket is known to the handler that runs on the thread
//    (current_connection_socket()), so a handler that waits for the engine can notice that
//    its client went away (peer_closed()) and cancel the request;
//  - between keep-alive requests the thread sleeps in poll() until the next request arrives
//    (httplib's own loop polls 10 ms at a time with a 1 ms sleep in between);
//  - the stream reads with one recv() per buffer fill and writes with one send() (the socket's
//    SO_RCVTIMEO / SO_SNDTIMEO bound them), instead of a poll() before each;
//  - is_writable() is false as soon as the peer closed its side (a streaming response stops
//    at its next chunk).
//
// Thread-safety: as httplib::Server; current_connection_socket() reads a thread_local of the
// calling worker thread.
#pragma once

#include <httplib.h>

namespace prima::server {

class ConnectionServer : public httplib::Server {
 public:
  // Raises the listening socket's accept queue (httplib listens with a backlog of 5, so a
  // burst of hundreds of connections overflows it: the kernel drops handshakes and clients see
  // resets). Call after binding. False when the socket refused.
  bool set_listen_backlog(int n);

 private:
  bool process_and_close_socket(socket_t sock) override;
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
