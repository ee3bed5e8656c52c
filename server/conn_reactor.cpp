// ConnReactor: the epoll loop over connections between requests (see conn_reactor.h).
#include "server/conn_reactor.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace prima::server {
namespace {

using Clock = PendingConn::Clock;
using Phase = PendingConn::Phase;

constexpr auto kLinger = std::chrono::seconds(2);  // a rejected connection's drain
constexpr std::size_t kReadStep = 16 * 1024;
constexpr std::size_t kReadPerWake = 256 * 1024;  // then other connections get their turn

double seconds_since(Clock::time_point t, Clock::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

void send_best_effort(int sock, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n =
        ::send(sock, data.data() + off, data.size() - off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;  // full or failed: the client that does not read loses the answer
  }
}

}  // namespace

ConnReactor::ConnReactor(ReactorLimits lim, ReadyFn ready, RejectFn reject, ClosedFn closed)
    : lim_(lim), ready_(std::move(ready)), reject_(std::move(reject)), closed_(std::move(closed)) {}

ConnReactor::~ConnReactor() {
  stop();
}

bool ConnReactor::start(std::string* error) {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wakefd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epfd_ < 0 || wakefd_ < 0) {
    if (error) *error = std::string("cannot create the connection poller: ") + std::strerror(errno);
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wakefd_;
  ::epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev);
  thread_ = std::thread([this] { run(); });
  return true;
}

void ConnReactor::stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wakefd_, &one, sizeof(one));
    thread_.join();
  }
  take_incoming();  // closes them: stopping_
  for (auto& [sock, c] : conns_) close_conn(sock);
  conns_.clear();
  held_ = 0;
  if (epfd_ >= 0) ::close(epfd_);
  if (wakefd_ >= 0) ::close(wakefd_);
  epfd_ = wakefd_ = -1;
}

void ConnReactor::add(std::unique_ptr<PendingConn> c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      incoming_.push_back(std::move(c));
      ++held_;
    }
  }
  if (c) {  // refused: the server stops
    close_conn(c->sock);
    return;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wakefd_, &one, sizeof(one));
}

void ConnReactor::take_incoming() {
  std::vector<std::unique_ptr<PendingConn>> in;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in.swap(incoming_);
  }
  for (auto& c : in) {
    if (stopping_) {
      --held_;
      close_conn(c->sock);
      continue;
    }
    watch(std::move(c));
  }
}

void ConnReactor::watch(std::unique_ptr<PendingConn> c) {
  PendingConn* p = c.get();
  p->phase = p->buf.empty() ? Phase::kIdle : Phase::kHeaders;
  p->since = Clock::now();
  const int sock = p->sock;
  conns_[sock] = std::move(c);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = sock;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, sock, &ev) != 0) {
    conns_.erase(sock);
    --held_;
    close_conn(sock);
    return;
  }
  if (!p->buf.empty()) advance(p);  // bytes that came with the previous request
}

void ConnReactor::run() {
  epoll_event events[256];
  auto last_sweep = Clock::now();
  while (!stopping_) {
    const int n = ::epoll_wait(epfd_, events, 256, 100);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wakefd_) {
        std::uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(wakefd_, &v, sizeof(v));
        continue;
      }
      auto it = conns_.find(fd);
      if (it != conns_.end()) on_readable(it->second.get());
    }
    take_incoming();
    const auto now = Clock::now();
    if (now - last_sweep >= std::chrono::milliseconds(100)) {
      sweep();
      last_sweep = now;
    }
  }
}

void ConnReactor::on_readable(PendingConn* c) {
  const int sock = c->sock;
  std::size_t got = 0;
  bool eof = false;
  while (got < kReadPerWake) {
    char tmp[kReadStep];
    const ssize_t n = ::recv(sock, tmp, sizeof(tmp), MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      if (c->phase != Phase::kClosing) c->buf.append(tmp, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    eof = true;  // 0: the peer closed; < 0: the connection failed
    break;
  }
  if (c->phase == Phase::kClosing) {
    if (eof) {
      close_conn(sock);
      conns_.erase(sock);
      --held_;
    }
    return;
  }
  if (got > 0 && advance(c) == false) return;
  if (eof) {
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, sock, nullptr);
    close_conn(sock);
    conns_.erase(sock);
    --held_;
  }
}

bool ConnReactor::advance(PendingConn* c) {
  if (c->phase == Phase::kIdle) {
    c->phase = Phase::kHeaders;
    c->since = Clock::now();
  }
  const auto st = frame_request(c->buf, lim_.framing, &c->framing);
  if (st == Framing::State::kError) {
    reject(c, c->framing.status, c->framing.message);
    return false;
  }
  if (st == Framing::State::kNeedBody && c->phase == Phase::kHeaders) {
    c->phase = Phase::kBody;
    c->since = Clock::now();
    if (c->framing.expect_continue && !c->sent_continue &&
        c->buf.size() == c->framing.header_bytes) {
      send_best_effort(c->sock, "HTTP/1.1 100 Continue\r\n\r\n");
      c->sent_continue = true;
    }
  }
  if (st != Framing::State::kComplete) return true;
  declare_empty_body(&c->buf, &c->framing);
  const int sock = c->sock;
  ::epoll_ctl(epfd_, EPOLL_CTL_DEL, sock, nullptr);
  auto node = conns_.extract(sock);
  --held_;
  ready_(std::move(node.mapped()));
  return false;
}

void ConnReactor::reject(PendingConn* c, int status, const std::string& message) {
  send_best_effort(c->sock, reject_(status, c->framing.path, message));
  ::shutdown(c->sock, SHUT_WR);
  c->phase = Phase::kClosing;
  c->since = Clock::now();
  c->buf.clear();
  c->buf.shrink_to_fit();
}

void ConnReactor::close_conn(int sock) {
  ::close(sock);
  if (closed_) closed_();
}

void ConnReactor::sweep() {
  const auto now = Clock::now();
  std::vector<int> expired;
  for (auto& [sock, c] : conns_) {
    const double age = seconds_since(c->since, now);
    switch (c->phase) {
      case Phase::kIdle:
        if (age >= lim_.idle_timeout_s) expired.push_back(sock);
        break;
      case Phase::kHeaders:
        if (age >= lim_.header_timeout_s)
          reject(c.get(), 408,
                 "the request's headers did not all arrive within " +
                     std::to_string(static_cast<int>(lim_.header_timeout_s)) +
                     " s (--header-timeout)");
        break;
      case Phase::kBody:
        if (age >= lim_.body_timeout_s)
          reject(c.get(), 408,
                 "the request's body did not all arrive within " +
                     std::to_string(static_cast<int>(lim_.body_timeout_s)) + " s (--body-timeout)");
        break;
      case Phase::kClosing:
        if (now - c->since >= kLinger) expired.push_back(sock);
        break;
    }
  }
  for (int sock : expired) {
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, sock, nullptr);
    close_conn(sock);
    conns_.erase(sock);
    --held_;
  }
}

}  // namespace prima::server
