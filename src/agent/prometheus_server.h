// A deliberately tiny HTTP/1.0 responder for Prometheus: GET /metrics only, one connection at
// a time, on its own thread. The request is read with a size cap (8 KiB) and a deadline
// (1 s); nothing read from the socket is used as a length. Anything else gets 404/400/405.
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
  uint64_t requests() const { return requests_.load(); }

 private:
  void Run();
  void Serve(int client_fd);

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
