// peer_closed (server/connection.h): an open connection, one with unread bytes (a pipelined
// request) and one whose peer closed or reset it, on real loopback TCP sockets; and
// TokenStream::wait_end_for (the wait loop of non-streaming handlers).
#include "server/connection.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "server/token_stream.h"

namespace prima::server {
namespace {

// A connected loopback TCP pair: client side and server (accepted) side.
struct TcpPair {
  int client = -1, server = -1;
  TcpPair() {
    const int lis = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(::bind(lis, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(lis, 1), 0);
    EXPECT_EQ(::getsockname(lis, reinterpret_cast<sockaddr*>(&a), &len), 0);
    client = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    server = ::accept(lis, nullptr, nullptr);
    EXPECT_GE(server, 0);
    ::close(lis);
  }
  ~TcpPair() {
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
  }
};

// The kernel delivers a FIN/RST on loopback at once, but give it a moment.
bool closed_soon(int sock) {
  for (int i = 0; i < 100; ++i) {
    if (peer_closed(sock)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(PeerClosed, AnOpenIdleConnectionIsNotClosed) {
  TcpPair p;
  EXPECT_FALSE(peer_closed(p.server));
}

TEST(PeerClosed, UnreadBytesFromTheClientAreNotAClose) {
  TcpPair p;
  ASSERT_EQ(::send(p.client, "GET / HTTP/1.1\r\n", 16, 0), 16);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(peer_closed(p.server));
  char buf[16];
  EXPECT_EQ(::recv(p.server, buf, sizeof(buf), MSG_PEEK), 16);  // still there: peeked only
}

TEST(PeerClosed, AClientThatClosesIsSeen) {
  TcpPair p;
  ::close(p.client);
  p.client = -1;
  EXPECT_TRUE(closed_soon(p.server));
}

TEST(PeerClosed, AClientThatClosesAfterSendingIsSeen) {
  TcpPair p;
  ASSERT_EQ(::send(p.client, "x", 1, 0), 1);
  ::close(p.client);
  p.client = -1;
  EXPECT_TRUE(closed_soon(p.server));
}

TEST(PeerClosed, OutsideAConnectionNothingIsClosed) {
  EXPECT_EQ(current_connection_socket(), INVALID_SOCKET);
  EXPECT_FALSE(peer_closed(INVALID_SOCKET));
}

TEST(TokenStreamWaitEndFor, TimesOutThenReturnsTheEndWithEveryToken) {
  TokenStream st;
  std::vector<StreamToken> toks;
  st.push(StreamToken{0, -1, 0.1, ""});
  EXPECT_FALSE(st.wait_end_for(&toks, std::chrono::milliseconds(10)).has_value());
  EXPECT_EQ(toks.size(), 1u);
  std::thread loop([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    st.push(StreamToken{1, -1, 0.2, ""});
    StreamEnd e;
    e.outcome = Outcome::kCompleted;
    e.output_tokens = 2;
    st.finish(e);
  });
  std::optional<StreamEnd> end;
  for (int i = 0; i < 200 && !end; ++i) end = st.wait_end_for(&toks, std::chrono::milliseconds(50));
  loop.join();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->output_tokens, 2);
  ASSERT_EQ(toks.size(), 2u);
  EXPECT_EQ(toks[1].index, 1);
}

}  // namespace
}  // namespace prima::server
