#include "kbv/serve/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace kbv::serve {
namespace {

constexpr int kReadTimeoutSeconds = 30;  // a client that stops sending mid-request is dropped

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

void send_all(int fd, const std::string& data) {
  for (std::size_t sent = 0; sent < data.size();) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client left: nothing to tell it
    sent += static_cast<std::size_t>(n);
  }
}

void answer(int fd, const HttpResponse& response) {
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " + reason(response.status) + "\r\n";
  head += "Content-Type: " + response.content_type + "\r\n";
  head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
  head += "Connection: close\r\n\r\n";
  send_all(fd, head + response.body);
}

HttpResponse error(int status, const std::string& message) {
  return {status, nlohmann::json{{"error", message}}.dump() + "\n", {}};
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// Reads more of the request into `buffer`; false when the client closed or went silent.
bool read_more(int fd, std::string& buffer) {
  char chunk[64 << 10];
  for (;;) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
}

}  // namespace

HttpServer::HttpServer(const std::string& host, int port, Handler handler, std::size_t max_connections,
                       std::size_t max_body_bytes)
    : handler_(std::move(handler)), max_connections_(max_connections), max_body_bytes_(max_body_bytes) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int code = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); code != 0) {
    throw std::runtime_error("cannot listen on " + host + ": " + gai_strerror(code));
  }
  std::string failure = "no address";
  for (addrinfo* a = found; a && listener_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      listener_ = fd;
    } else {
      failure = std::strerror(errno);
      ::close(fd);
    }
  }
  freeaddrinfo(found);
  if (listener_ < 0) throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " + failure);
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &length);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (::pipe2(wake_, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
}

HttpServer::~HttpServer() {
  stop();
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return open_ == 0; });
  for (const int fd : {listener_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void HttpServer::stop() {
  if (stopping_.exchange(true)) return;
  const char byte = 0;
  [[maybe_unused]] const ssize_t n = ::write(wake_[1], &byte, 1);
}

void HttpServer::serve() {
  while (!stopping_) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    if (!(fds[0].revents & POLLIN)) continue;
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const timeval timeout{kReadTimeoutSeconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    {
      std::lock_guard lock(mutex_);
      if (open_ >= max_connections_) {
        answer(fd, error(503, "too many connections"));
        ::close(fd);
        continue;
      }
      ++open_;
    }
    std::thread([this, fd] {
      connection(fd);
      ::close(fd);
      std::lock_guard lock(mutex_);
      --open_;
      idle_.notify_all();
    }).detach();
  }
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return open_ == 0; });
}

void HttpServer::connection(int fd) {
  std::string buffer;
  std::size_t header_end;
  while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (buffer.size() > kMaxHeaderBytes) return answer(fd, error(431, "the request's head is over 64 KiB"));
    if (!read_more(fd, buffer)) return;
  }
  HttpRequest request;
  std::size_t line_end = buffer.find("\r\n");
  const std::string request_line = buffer.substr(0, line_end);
  const auto first_space = request_line.find(' '), second_space = request_line.rfind(' ');
  if (first_space == std::string::npos || second_space == first_space)
    return answer(fd, error(400, "malformed request line"));
  request.method = request_line.substr(0, first_space);
  request.path = request_line.substr(first_space + 1, second_space - first_space - 1);
  request.path = request.path.substr(0, request.path.find('?'));

  std::size_t content_length = 0;
  bool has_length = false, expects_continue = false;
  for (std::size_t at = line_end + 2; at < header_end; at = line_end + 2) {
    line_end = buffer.find("\r\n", at);
    const std::string line = buffer.substr(at, line_end - at);
    const auto colon = line.find(':');
    if (colon == std::string::npos) return answer(fd, error(400, "malformed header line"));
    const std::string name = lower(trim(line.substr(0, colon))), value = trim(line.substr(colon + 1));
    if (name == "content-length") {
      try {
        std::size_t used = 0;
        content_length = std::stoull(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
      } catch (const std::exception&) {
        return answer(fd, error(400, "malformed Content-Length"));
      }
      has_length = true;
    } else if (name == "transfer-encoding") {
      return answer(fd, error(411, "send the body with a Content-Length"));
    } else if (name == "expect" && lower(value) == "100-continue") {
      expects_continue = true;
    }
  }
  if (!has_length && request.method == "POST") return answer(fd, error(411, "send the body with a Content-Length"));
  if (content_length > max_body_bytes_) {
    return answer(fd, error(413, "the body is over " + std::to_string(max_body_bytes_ >> 20) + " MiB"));
  }
  if (expects_continue) send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n");
  request.body = buffer.substr(header_end + 4);
  while (request.body.size() < content_length) {
    if (!read_more(fd, request.body)) return answer(fd, error(408, "the body ended before its Content-Length"));
  }
  request.body.resize(content_length);
  HttpResponse response;
  try {
    response = handler_(request);
  } catch (const std::exception& failure) {
    response = error(500, failure.what());
  }
  answer(fd, response);
}

}  // namespace kbv::serve
