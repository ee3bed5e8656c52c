// ConnectionServer: the per-connection loop of `prima serve` (see connection.h).
#include "server/connection.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

namespace prima::server {
namespace {

thread_local socket_t tl_socket = INVALID_SOCKET;

// The numeric address and port of a socket's peer (peer = true) or of its own side.
void address_of(socket_t sock, bool peer, std::string* ip, int* port) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  const int rc = peer ? getpeername(sock, reinterpret_cast<sockaddr*>(&a), &len)
                      : getsockname(sock, reinterpret_cast<sockaddr*>(&a), &len);
  ip->clear();
  *port = 0;
  if (rc != 0) return;
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof(host), serv, sizeof(serv),
                  NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    *ip = host;
    *port = std::atoi(serv);
  }
}

int poll_once(socket_t sock, short events, int timeout_ms, short* revents) {
  pollfd p{sock, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  *revents = n > 0 ? p.revents : 0;
  return n;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

int to_ms(time_t sec, time_t usec) {
  return static_cast<int>(std::min<long long>(sec * 1000LL + usec / 1000, 1 << 30));
}

// One connection's byte stream for httplib's process_request: reads come from the bytes the
// reactor buffered (the whole request is there; httplib reads the request line and headers a
// byte at a time and never past the request's end), and a response's status line and headers
// (which httplib writes on their own) are held back so that they leave with the body in one
// send; they are flushed by the next write, read, readiness check, or the request's end.
class ConnStream : public httplib::Stream {
 public:
  ConnStream(socket_t sock, std::string in, int read_timeout_ms, int write_timeout_ms)
      : sock_(sock), read_ms_(read_timeout_ms), write_ms_(write_timeout_ms), in_(std::move(in)) {
    address_of(sock_, true, &remote_ip_, &remote_port_);
    address_of(sock_, false, &local_ip_, &local_port_);
  }

  bool is_readable() const override {
    if (off_ < in_.size()) return true;
    if (!flush()) return false;
    short rev = 0;
    return poll_once(sock_, POLLIN, read_ms_, &rev) > 0;
  }
  bool is_writable() const override {
    if (!flush()) return false;
    short rev = 0;
    if (poll_once(sock_, POLLOUT | POLLRDHUP, write_ms_, &rev) <= 0) return false;
    return (rev & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0 && (rev & POLLOUT);
  }
  ssize_t read(char* ptr, size_t size) override {
    if (!flush()) return -1;
    if (off_ < in_.size()) {
      const size_t n = std::min(size, in_.size() - off_);
      std::memcpy(ptr, in_.data() + off_, n);
      off_ += n;
      return static_cast<ssize_t>(n);
    }
    return recv_all(ptr, size);  // past the framed request: not expected, bounded by SO_RCVTIMEO
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (held_.empty() && is_head(ptr, size)) {
      held_.assign(ptr, size);
      return static_cast<ssize_t>(size);
    }
    if (held_.empty()) return send_some(ptr, size);
    // The held head and this data in one sendmsg; what the kernel did not take of the head is
    // sent first (head and data must stay in order).
    iovec iov[2] = {{held_.data(), held_.size()}, {const_cast<char*>(ptr), size}};
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = 2;
    ssize_t n;
    do {
      n = ::sendmsg(sock_, &m, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return n;
    const size_t head = held_.size();
    if (static_cast<size_t>(n) < head) {
      held_.erase(0, static_cast<size_t>(n));
      if (!flush()) return -1;
      return 0;  // nothing of `ptr` went out yet: httplib writes it again
    }
    held_.clear();
    return n - static_cast<ssize_t>(head);
  }
  // Sends what is held back (a head with no body after it); false when the socket failed.
  bool flush() const {
    while (!held_.empty()) {
      const ssize_t n = send_some(held_.data(), held_.size());
      if (n <= 0) return false;
      held_.erase(0, static_cast<size_t>(n));
    }
    return true;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_ip_;
    port = local_port_;
  }
  socket_t socket() const override { return sock_; }

  // The bytes received and not consumed (pipelined requests); the stream keeps none.
  std::string take_rest() {
    std::string rest = in_.substr(std::min(off_, in_.size()));
    in_.clear();
    off_ = 0;
    return rest;
  }
  // Serves the next request from `in`.
  void reset(std::string in) {
    in_ = std::move(in);
    off_ = 0;
  }

 private:
  // An HTTP response's status line and headers, written alone by httplib.
  static bool is_head(const char* p, size_t n) {
    return n >= 13 && n <= 16384 && std::memcmp(p, "HTTP/1.1 ", 9) == 0 &&
           std::memcmp(p + n - 4, "\r\n\r\n", 4) == 0;
  }
  ssize_t send_some(const char* p, size_t n) const {
    ssize_t r;
    do {
      r = ::send(sock_, p, n, MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    return r;
  }

  ssize_t recv_all(char* p, size_t n) {
    ssize_t r;
    do {
      r = ::recv(sock_, p, n, 0);
    } while (r < 0 && errno == EINTR);
    return r;  // -1 with EAGAIN: SO_RCVTIMEO expired
  }

  socket_t sock_;
  int read_ms_, write_ms_;
  std::string in_;
  size_t off_ = 0;
  mutable std::string held_;  // a response head waiting for its body
  std::string remote_ip_, local_ip_;
  int remote_port_ = 0, local_port_ = 0;
};

}  // namespace

socket_t current_connection_socket() {
  return tl_socket;
}

bool peer_closed(socket_t sock) {
  if (sock == INVALID_SOCKET) return false;
  short rev = 0;
  const int n = poll_once(sock, POLLIN | POLLRDHUP, 0, &rev);
  if (n < 0) return true;
  if (n == 0) return false;
  if (rev & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (rev & POLLIN) {  // data, or an end of stream poll did not flag
    char c;
    ssize_t r;
    do {
      r = ::recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  return false;
}

bool ConnectionServer::set_listen_backlog(int n) {
  const socket_t s = svr_sock_;
  return s != INVALID_SOCKET && ::listen(s, n) == 0;  // listen() again updates the backlog
}

// httplib's task queue: its accept loop calls enqueue() with each new connection. Running it
// inline hands the socket to the reactor at once; listening's end stops reactor and workers.
class ConnectionServer::Queue : public httplib::TaskQueue {
 public:
  explicit Queue(ConnectionServer* s) : s_(s) { s_->start_workers(); }
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { s_->stop_workers(); }

 private:
  ConnectionServer* s_;
};

ConnectionServer::ConnectionServer() {
  new_task_queue = [this] { return new Queue(this); };
  error_body = [](int, const std::string&, const std::string& message) {
    return "{\"error\":\"" + message + "\"}";
  };
}

ConnectionServer::~ConnectionServer() {
  stop_workers();
}

void ConnectionServer::set_connection_limits(const ConnectionLimits& lim) {
  lim_ = lim;
}

void ConnectionServer::start_workers() {
  // Each connection is a file descriptor: take the hard limit, keep room for the rest.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  cap_ = lim_.max_connections;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    cap_ = static_cast<int>(std::max<long long>(
        1, std::min<long long>(cap_, static_cast<long long>(rl.rlim_cur) - 128)));
  pool_ =
      std::make_unique<httplib::ThreadPool>(static_cast<size_t>(std::max(1, lim_.worker_threads)));
  reactor_ = std::make_unique<ConnReactor>(
      lim_.reactor,
      [this](std::unique_ptr<PendingConn> c) {
        PendingConn* raw = c.release();
        pool_->enqueue([this, raw] { serve(std::unique_ptr<PendingConn>(raw)); });
      },
      [this](int status, const std::string& path, const std::string& message) {
        return error_response(status, path, message);
      },
      [this] { --open_; });
  std::string err;
  if (!reactor_->start(&err)) {
    std::fprintf(stderr, "prima serve: %s\n", err.c_str());
    stop();
  }
}

void ConnectionServer::stop_workers() {
  std::lock_guard<std::mutex> lock(workers_mu_);
  if (reactor_) reactor_->stop();  // closes idle and arriving connections
  if (pool_) pool_->shutdown();    // requests in progress finish; their connections close
  pool_.reset();
  reactor_.reset();
}

std::string ConnectionServer::error_response(int status, const std::string& path,
                                             const std::string& message) const {
  const std::string body = error_body(status, path, message);
  std::string out =
      "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n";
  if (status == 503) out += "Retry-After: 1\r\n";
  return out + "\r\n" + body;
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  // Only this (the accepting) thread adds to open_: a refused connection is never counted.
  if (open_.load() >= cap_ || !reactor_) {
    // Refused fast, on the accept thread: a short answer if the socket takes it, then close.
    const std::string r = error_response(503, "",
                                         "the server is at its limit of " + std::to_string(cap_) +
                                             " open connections (--max-connections); retry later");
    [[maybe_unused]] ssize_t n = ::send(sock, r.data(), r.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return false;
  }
  ++open_;
  // Bound every blocking recv/send of the workers by the read/write timeouts.
  timeval rt{static_cast<time_t>(read_timeout_sec_), static_cast<suseconds_t>(read_timeout_usec_)};
  timeval wt{static_cast<time_t>(write_timeout_sec_),
             static_cast<suseconds_t>(write_timeout_usec_)};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &rt, sizeof(rt));
  setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &wt, sizeof(wt));
  // Small writes (SSE events, one per token) leave at once: without this, Nagle holds each
  // until the client's delayed ACK (~40 ms on Linux) once a previous one is unacknowledged.
  const int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  auto c = std::make_unique<PendingConn>();
  c->sock = sock;
  reactor_->add(std::move(c));
  return true;
}

void ConnectionServer::serve(std::unique_ptr<PendingConn> c) {
  const socket_t sock = c->sock;
  ConnStream strm(sock, std::move(c->buf), to_ms(read_timeout_sec_, read_timeout_usec_),
                  to_ms(write_timeout_sec_, write_timeout_usec_));
  tl_socket = sock;
  bool keep = false;
  while (true) {
    const bool last =
        ++c->served >= static_cast<int>(keep_alive_max_count_) || svr_sock_ == INVALID_SOCKET;
    bool closed = false;
    bool ok = process_request(strm, /*close_connection=*/last, closed, nullptr);
    if (!strm.flush()) ok = false;  // a head without a body
    if (!ok || closed || last) break;
    // A pipelined request already whole is served now; anything less goes back to the reactor.
    c->buf = strm.take_rest();
    c->framing = Framing{};
    c->sent_continue = false;
    if (!c->buf.empty() &&
        frame_request(c->buf, lim_.reactor.framing, &c->framing) == Framing::State::kComplete) {
      declare_empty_body(&c->buf, &c->framing);
      c->framing = Framing{};
      strm.reset(std::move(c->buf));
      continue;
    }
    keep = true;
    break;
  }
  tl_socket = INVALID_SOCKET;
  if (keep) {
    c->framing = Framing{};
    reactor_->add(std::move(c));
    return;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  --open_;
}

}  // namespace prima::server
