#include "agent/prometheus_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "agent/clock.h"

namespace eroica::agent {
namespace {

constexpr size_t kMaxRequestBytes = 8 << 10;
constexpr int64_t kConnectionDeadlineNs = 2'000'000'000;

const char* StatusText(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    default:
      return "Error";
  }
}

bool HeadComplete(const std::string& head) {
  return head.find("\r\n\r\n") != std::string::npos || head.find("\n\n") != std::string::npos;
}

}  // namespace

struct PrometheusServer::Connection {
  int fd = -1;
  int64_t deadline_ns = 0;
  std::string head;
  std::string reply;  // non-empty once the request is complete
  size_t sent = 0;
};

HttpReply RouteRequest(std::string_view head, const std::function<std::string()>& render) {
  size_t line_end = head.find("\r\n");
  if (line_end == std::string_view::npos) line_end = head.find('\n');
  std::string_view line = head.substr(0, line_end);
  size_t first_space = line.find(' ');
  if (first_space == std::string_view::npos) return {400, "bad request\n"};
  std::string_view method = line.substr(0, first_space);
  std::string_view rest = line.substr(first_space + 1);
  std::string_view path = rest.substr(0, rest.find(' '));
  if (method != "GET") return {405, "only GET\n"};
  if (path != "/metrics" && path.rfind("/metrics?", 0) != 0) return {404, "try /metrics\n"};
  return {200, render()};
}

PrometheusServer::~PrometheusServer() { Stop(); }

Status PrometheusServer::Start(const std::string& bind_address, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, bind_address.c_str(), &address.sin_addr) != 1) {
    return ErrorStatus("--prometheus-bind {}: not an IPv4 address", bind_address);
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) return ErrorStatus("socket: {}", std::strerror(errno));
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    Status error = ErrorStatus("cannot listen on {}:{}: {}", bind_address, port, std::strerror(errno));
    ::close(listen_fd_);
    listen_fd_ = -1;
    return error;
  }
  socklen_t length = sizeof(address);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  stop_.store(false);
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void PrometheusServer::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void PrometheusServer::Run() {
  std::vector<Connection> connections;
  std::vector<pollfd> polled;
  while (!stop_.load()) {
    polled.assign(1, pollfd{listen_fd_, POLLIN, 0});
    int64_t now_ns = MonotonicNs();
    int64_t wait_ms = 200;  // wakes up to notice Stop()
    for (const Connection& c : connections) {
      polled.push_back({c.fd, static_cast<short>(c.reply.empty() ? POLLIN : POLLOUT), 0});
      wait_ms = std::min(wait_ms, std::max<int64_t>(0, (c.deadline_ns - now_ns) / 1'000'000 + 1));
    }
    if (::poll(polled.data(), polled.size(), static_cast<int>(wait_ms)) < 0 && errno != EINTR) {
      continue;
    }
    now_ns = MonotonicNs();
    std::vector<Connection> kept;
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = connections[i];
      short events = polled[i + 1].revents;
      bool open = true;
      if (events & (POLLERR | POLLNVAL)) {
        open = false;
      } else if (events & (POLLIN | POLLHUP) && c.reply.empty()) {
        open = ReadRequest(&c);
      } else if (events & POLLOUT) {
        open = WriteReply(&c);
      }
      if (open && now_ns >= c.deadline_ns) open = false;  // idle, slow or not reading: dropped
      if (open) {
        kept.push_back(std::move(c));
      } else {
        ::close(c.fd);
      }
    }
    connections = std::move(kept);
    if (polled[0].revents & POLLIN) {
      // Everything waiting is accepted; past the cap a connection is closed at once.
      while (true) {
        int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (client < 0) break;
        if (connections.size() >= kMaxConnections) {
          ::close(client);
          continue;
        }
        connections.push_back({client, now_ns + kConnectionDeadlineNs, {}, {}, 0});
      }
    }
  }
  for (const Connection& c : connections) ::close(c.fd);
}

bool PrometheusServer::ReadRequest(Connection* c) {
  char buffer[1024];
  while (!HeadComplete(c->head)) {
    if (c->head.size() >= kMaxRequestBytes) return false;  // huge: drop it
    size_t room = std::min(sizeof(buffer), kMaxRequestBytes - c->head.size());
    ssize_t n = ::recv(c->fd, buffer, room, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;  // more later
    if (n <= 0) return false;
    c->head.append(buffer, static_cast<size_t>(n));
  }
  requests_.fetch_add(1);
  HttpReply reply = RouteRequest(c->head, render_);
  c->reply = fmt::format(
      "HTTP/1.0 {} {}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
      "Content-Length: {}\r\nConnection: close\r\n\r\n",
      reply.status, StatusText(reply.status), reply.body.size());
  c->reply += reply.body;
  return WriteReply(c);
}

bool PrometheusServer::WriteReply(Connection* c) {
  while (c->sent < c->reply.size()) {
    ssize_t n = ::send(c->fd, c->reply.data() + c->sent, c->reply.size() - c->sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;  // more later
    if (n <= 0) return false;
    c->sent += static_cast<size_t>(n);
  }
  return false;  // all sent: close
}

}  // namespace eroica::agent
