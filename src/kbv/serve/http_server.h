// The HTTP/1.1 server under kbv serve's JSON API: one request per connection (answered with
// `Connection: close`), bodies by Content-Length, a thread per connection up to a bound (past it a
// connection is answered 503 at once). The API needs no more, and the GPU machines, which install
// nothing, build it from kbv's own tree.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace kbv::serve {

struct HttpRequest {
  std::string method, path, body;  // path without its query
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::map<std::string, std::string> headers;  // besides Content-Type, Content-Length, Connection
  std::string content_type = "application/json";
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  static constexpr std::size_t kMaxHeaderBytes = 64 << 10;

  // Listens on host:port (port 0: a free one, see port()). Throws std::runtime_error.
  HttpServer(const std::string& host, int port, Handler handler, std::size_t max_connections,
             std::size_t max_body_bytes);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // Accepts connections until stop(); returns once every connection's handler has answered.
  void serve();
  // From any thread but a signal handler: accept no more connections.
  void stop();

 private:
  void connection(int fd);

  Handler handler_;
  std::size_t max_connections_, max_body_bytes_;
  int listener_ = -1, port_ = 0;
  int wake_[2] = {-1, -1};  // stop() writes, serve()'s poll wakes
  std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t open_ = 0;  // connections being answered
  std::atomic<bool> stopping_ = false;
};

}  // namespace kbv::serve
