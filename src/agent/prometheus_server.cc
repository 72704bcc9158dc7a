#include "agent/prometheus_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "agent/clock.h"

namespace eroica::agent {
namespace {

constexpr size_t kMaxRequestBytes = 8 << 10;
constexpr int64_t kRequestDeadlineNs = 1'000'000'000;

const char* StatusText(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    default: return "Error";
  }
}

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

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
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return ErrorStatus("socket: {}", std::strerror(errno));
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listen_fd_, 8) != 0) {
    Status error = ErrorStatus("cannot listen on {}:{}: {}", bind_address, port,
                               std::strerror(errno));
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
  while (!stop_.load()) {
    pollfd entry{listen_fd_, POLLIN, 0};
    if (::poll(&entry, 1, 200) <= 0) continue;  // wakes up to notice Stop()
    int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    Serve(client);
    ::close(client);
  }
}

void PrometheusServer::Serve(int client_fd) {
  timeval send_timeout{1, 0};  // a client that does not read must not stall the server
  ::setsockopt(client_fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
  std::string head;
  char buffer[1024];
  int64_t deadline_ns = MonotonicNs() + kRequestDeadlineNs;
  while (head.find("\r\n\r\n") == std::string::npos && head.find("\n\n") == std::string::npos) {
    int64_t left_ms = (deadline_ns - MonotonicNs()) / 1'000'000;
    if (left_ms <= 0 || head.size() >= kMaxRequestBytes) return;  // slow or huge: drop it
    pollfd entry{client_fd, POLLIN, 0};
    if (::poll(&entry, 1, static_cast<int>(left_ms)) <= 0) return;
    size_t room = std::min(sizeof(buffer), kMaxRequestBytes - head.size());
    ssize_t n = ::recv(client_fd, buffer, room, 0);
    if (n <= 0) return;
    head.append(buffer, static_cast<size_t>(n));
  }
  requests_.fetch_add(1);
  HttpReply reply = RouteRequest(head, render_);
  std::string response = fmt::format(
      "HTTP/1.0 {} {}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
      "Content-Length: {}\r\nConnection: close\r\n\r\n",
      reply.status, StatusText(reply.status), reply.body.size());
  WriteAll(client_fd, response);
  WriteAll(client_fd, reply.body);
}

}  // namespace eroica::agent
