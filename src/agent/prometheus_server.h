// A deliberately tiny HTTP/1.0 responder for Prometheus: GET /metrics only, on its own thread.
// One poll() loop serves up to 64 connections at once, so idle or slow clients never hold up
// a scrape; each connection has a request cap (8 KiB) and a deadline (2 s from accept, for
// reading the request and writing the answer), and connections beyond the cap are closed at
// once. Nothing read from the socket is used as a length. Anything else gets 404/400/405.
// Binds loopback unless told otherwise (AgentOptions::prometheus_bind).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "base/status.h"

namespace eroica::agent {

class PrometheusServer {
 public:
  // render() is called on the server thread for each scrape and returns the page body.
  explicit PrometheusServer(std::function<std::string()> render) : render_(std::move(render)) {}
  ~PrometheusServer();

  // Binds bind_address:port (port 0: any free port, see port()) and starts serving.
  Status Start(const std::string& bind_address, int port);
  void Stop();
  int port() const { return port_; }
  static constexpr size_t kMaxConnections = 64;
  uint64_t requests() const { return requests_.load(); }

 private:
  struct Connection;
  void Run();
  // Reads what is there; false when the connection is done with (closed, over the cap).
  bool ReadRequest(Connection* connection);
  bool WriteReply(Connection* connection);

  std::function<std::string()> render_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> requests_{0};
  std::thread thread_;
};

// Parses an HTTP request head ("GET /metrics HTTP/1.1\r\n..."); returns the status line and
// body to answer with. Exposed for tests.
struct HttpReply {
  int status = 200;
  std::string body;
};
HttpReply RouteRequest(std::string_view request_head, const std::function<std::string()>& render);

}  // namespace eroica::agent
