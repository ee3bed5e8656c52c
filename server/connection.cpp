// ConnectionServer: the per-connection loop of `prima serve` (see connection.h).
#include "server/connection.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
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

int to_ms(time_t sec, time_t usec) {
  return static_cast<int>(std::min<long long>(sec * 1000LL + usec / 1000, 1 << 30));
}

// One connection's byte stream for httplib's process_request: buffered reads (the request
// line and headers are read a byte at a time), and a response's status line and headers
// (which httplib writes on their own) held back so that they leave with the body in one
// send; they are flushed by the next write, read, readiness check, or the request's end.
class ConnStream : public httplib::Stream {
 public:
  ConnStream(socket_t sock, int read_timeout_ms, int write_timeout_ms)
      : sock_(sock), read_ms_(read_timeout_ms), write_ms_(write_timeout_ms) {
    address_of(sock_, true, &remote_ip_, &remote_port_);
    address_of(sock_, false, &local_ip_, &local_port_);
  }

  bool is_readable() const override {
    if (off_ < len_) return true;
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
    if (off_ < len_) {
      const size_t n = std::min(size, len_ - off_);
      std::memcpy(ptr, buf_ + off_, n);
      off_ += n;
      return static_cast<ssize_t>(n);
    }
    if (size >= sizeof(buf_)) return recv_all(ptr, size);
    const ssize_t n = recv_all(buf_, sizeof(buf_));
    if (n <= 0) return n;
    const size_t k = std::min(size, static_cast<size_t>(n));
    std::memcpy(ptr, buf_, k);
    off_ = k;
    len_ = static_cast<size_t>(n);
    return static_cast<ssize_t>(k);
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

  // Bytes already read from the socket and not yet consumed (a pipelined request).
  bool buffered() const { return off_ < len_; }

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
  char buf_[4096];
  size_t off_ = 0, len_ = 0;
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

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  // Bound every blocking recv/send by the read/write timeouts.
  timeval rt{static_cast<time_t>(read_timeout_sec_), static_cast<suseconds_t>(read_timeout_usec_)};
  timeval wt{static_cast<time_t>(write_timeout_sec_),
             static_cast<suseconds_t>(write_timeout_usec_)};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &rt, sizeof(rt));
  setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &wt, sizeof(wt));
  // Small writes (SSE events, one per token) leave at once: without this, Nagle holds each
  // until the client's delayed ACK (~40 ms on Linux) once a previous one is unacknowledged.
  const int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ConnStream strm(sock, to_ms(read_timeout_sec_, read_timeout_usec_),
                  to_ms(write_timeout_sec_, write_timeout_usec_));
  tl_socket = sock;
  bool ok = false;
  const auto idle_limit = std::chrono::seconds(keep_alive_timeout_sec_);
  for (std::size_t left = keep_alive_max_count_; left > 0; --left) {
    // Wait for the next request: poll() until bytes arrive, in slices short enough to notice
    // stop() (the listener's socket becomes invalid) soon.
    bool ready = strm.buffered();
    const auto idle_since = std::chrono::steady_clock::now();
    while (!ready && svr_sock_ != INVALID_SOCKET) {
      short rev = 0;
      const int n = poll_once(sock, POLLIN, 100, &rev);
      if (n < 0) break;
      if (n > 0) {
        ready = (rev & POLLIN) != 0;
        break;
      }
      if (std::chrono::steady_clock::now() - idle_since >= idle_limit) break;
    }
    if (!ready || svr_sock_ == INVALID_SOCKET) break;
    bool closed = false;
    ok = process_request(strm, /*close_connection=*/left == 1, closed, nullptr);
    if (!strm.flush()) ok = false;  // a head without a body
    if (!ok || closed) break;
  }
  tl_socket = INVALID_SOCKET;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace prima::server
