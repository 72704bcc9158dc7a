#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "agent/prometheus_server.h"
#include "agent/prometheus_text.h"

namespace eroica::agent {
namespace {

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` to 127.0.0.1:port and returns all it answers.
std::string Exchange(int port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return "connect failed";
  }
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply;
  char buffer[4096];
  ssize_t n;
  while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) reply.append(buffer, n);
  ::close(fd);
  return reply;
}

TEST(PrometheusTest, RoutesOnlyGetMetrics) {
  auto render = [] { return std::string("x 1\n"); };
  EXPECT_EQ(RouteRequest("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n", render).status, 200);
  EXPECT_EQ(RouteRequest("GET /metrics?x=1 HTTP/1.0\r\n\r\n", render).status, 200);
  EXPECT_EQ(RouteRequest("GET / HTTP/1.0\r\n\r\n", render).status, 404);
  EXPECT_EQ(RouteRequest("POST /metrics HTTP/1.0\r\n\r\n", render).status, 405);
  EXPECT_EQ(RouteRequest("garbage", render).status, 400);
  EXPECT_EQ(RouteRequest("", render).status, 400);
}

TEST(PrometheusTest, RendersHealthAndIterationTimes) {
  AgentHealth health;
  health.samples = 1234;
  health.dropped_samples = 5;
  Registration rank;
  rank.pid = 77;
  rank.rank = 3;
  rank.host = "node\"7";
  rank.last_iteration_s = 0.5;
  std::string text = RenderPrometheusText(health, {rank, Registration{78}});
  EXPECT_NE(text.find("eroica_agent_samples_total 1234\n"), std::string::npos);
  EXPECT_NE(text.find("eroica_agent_dropped_samples_total 5\n"), std::string::npos);
  EXPECT_NE(text.find("eroica_agent_registered_processes 2\n"), std::string::npos);
  EXPECT_NE(text.find("eroica_training_last_iteration_seconds{rank=\"3\",pid=\"77\","
                      "host=\"node\\\"7\"} 0.5\n"),
            std::string::npos);
  EXPECT_EQ(text.find("pid=\"78\""), std::string::npos);
}

TEST(PrometheusTest, ServesOverLoopbackAndSurvivesBadClients) {
  PrometheusServer server([] { return std::string("eroica_agent_up 1\n"); });
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  ASSERT_GT(server.port(), 0);
  std::string reply = Exchange(server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << reply;
  EXPECT_NE(reply.find("Content-Length: 18\r\n"), std::string::npos);
  EXPECT_NE(reply.find("\r\n\r\neroica_agent_up 1\n"), std::string::npos);
  EXPECT_EQ(Exchange(server.port(), "GET /nope HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 404", 0), 0u);
  // A head that never ends is cut off at 8 KiB; one that lies about lengths changes nothing.
  EXPECT_EQ(Exchange(server.port(), std::string(20000, 'A')), "");
  std::string liar = "GET /metrics HTTP/1.0\r\nContent-Length: 99999999999\r\n\r\n";
  EXPECT_EQ(Exchange(server.port(), liar).rfind("HTTP/1.0 200", 0), 0u);
  EXPECT_EQ(server.requests(), 3u);
  server.Stop();
  EXPECT_FALSE(PrometheusServer([] { return std::string(); }).Start("not-an-ip", 0).ok());
}

// The old server served one connection at a time with a 1 s read deadline each: 8 idle
// connections made a scrape wait 8 s.
TEST(PrometheusTest, IdleAndSlowClientsDoNotDelayAScrape) {
  PrometheusServer server([] { return std::string("eroica_agent_up 1\n"); });
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  std::vector<int> idle;
  for (int i = 0; i < 16; ++i) idle.push_back(Connect(server.port()));
  int slow = Connect(server.port());
  ASSERT_GE(slow, 0);
  ::send(slow, "GET /met", 8, MSG_NOSIGNAL);  // and then nothing more for a while
  auto start = std::chrono::steady_clock::now();
  std::string reply = Exchange(server.port(), "GET /metrics HTTP/1.0\r\n\r\n");
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(reply.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << reply;
  EXPECT_LT(took, std::chrono::milliseconds(500));
  // The slow client still gets its answer when it finishes.
  ::send(slow, "rics HTTP/1.0\r\n\r\n", 17, MSG_NOSIGNAL);
  char buffer[256];
  ssize_t n = ::recv(slow, buffer, sizeof(buffer), 0);
  ASSERT_GT(n, 12);
  EXPECT_EQ(std::string(buffer, 12), "HTTP/1.0 200");
  ::close(slow);
  // Idle connections are closed at their deadline (2 s), not kept forever.
  timeval timeout{4, 0};
  ::setsockopt(idle[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  start = std::chrono::steady_clock::now();
  EXPECT_LE(::recv(idle[0], buffer, sizeof(buffer), 0), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(3500));
  for (int fd : idle) ::close(fd);
}

TEST(PrometheusTest, ConnectionsBeyondTheCapAreClosedAndScrapesStillServed) {
  PrometheusServer server([] { return std::string("eroica_agent_up 1\n"); });
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  std::vector<int> held;
  for (size_t i = 0; i < PrometheusServer::kMaxConnections + 8; ++i) held.push_back(Connect(server.port()));
  // The last ones were accepted and closed at once: they read EOF, not a hang.
  timeval timeout{2, 0};
  ::setsockopt(held.back(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  char buffer[16];
  EXPECT_EQ(::recv(held.back(), buffer, sizeof(buffer), 0), 0);
  for (int i = 0; i < 8; ++i) ::close(held[static_cast<size_t>(i)]);
  // With room again, a scrape is served while the rest stay idle. The server frees a slot when
  // its thread next sees the close: tried back to back, 20 scrapes can all come before that (a
  // sanitized CI run on 2 busy cores); 40 ms apart they span 0.8 s, well inside the held
  // connections' 2 s deadline, which would make room by itself.
  std::string reply;
  for (int attempt = 0; attempt < 20 && reply.rfind("HTTP/1.0 200", 0) != 0; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(40));
    reply = Exchange(server.port(), "GET /metrics HTTP/1.0\r\n\r\n");
  }
  EXPECT_EQ(reply.rfind("HTTP/1.0 200", 0), 0u) << reply;
  for (size_t i = 8; i < held.size(); ++i) ::close(held[i]);
}

}  // namespace
}  // namespace eroica::agent
