#include "kbv/ipc/fd_passing.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "kbv/common/deadline.h"
#include "kbv/common/syscall.h"

namespace kbv::ipc {

void send_fds(int socket, std::string_view text, std::span<const int> fds) {
  if (fds.size() > kMaxPassedFds) throw std::invalid_argument("send_fds: more than kMaxPassedFds files");
  iovec data{const_cast<char*>(text.data()), text.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxPassedFds * sizeof(int))];
  std::memset(control, 0, sizeof control);
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  if (!fds.empty()) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(fds.size_bytes());
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(fds.size_bytes());
    std::memcpy(CMSG_DATA(header), fds.data(), fds.size_bytes());
  }
  ssize_t sent;
  while ((sent = sendmsg(socket, &message, MSG_NOSIGNAL)) == -1 && errno == EINTR) {
  }
  if (sent == -1) detail::throw_syscall_error(errno, "sendmsg(SCM_RIGHTS)", __FILE__, __LINE__);
}

PassedFds receive_fds(int socket, std::chrono::steady_clock::time_point deadline) {
  PassedFds received;
  for (;;) {
    pollfd ready{socket, POLLIN, 0};
    const int n = poll(&ready, 1, poll_timeout_ms(std::chrono::steady_clock::now(), deadline));
    if (n == -1 && errno == EINTR) continue;
    if (n == -1) detail::throw_syscall_error(errno, "poll(fd socket)", __FILE__, __LINE__);
    if (n == 0) {
      received.status = PassedFds::Status::timeout;
      return received;
    }
    break;
  }
  static thread_local char buffer[1 << 16];
  iovec data{buffer, sizeof buffer};
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxPassedFds * sizeof(int))];
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = recvmsg(socket, &message, MSG_CMSG_CLOEXEC)) == -1 && errno == EINTR) {
  }
  if (n == -1) detail::throw_syscall_error(errno, "recvmsg(SCM_RIGHTS)", __FILE__, __LINE__);
  // Every fd that arrived is owned at once, so none leaks whatever the sender put in.
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
      received.fds.emplace_back(fd);
    }
  }
  if (n == 0 && received.fds.empty()) return received;  // closed
  received.status = PassedFds::Status::message;
  received.text.assign(buffer, static_cast<std::size_t>(n));
  explicit_bzero(buffer, static_cast<std::size_t>(n));  // the text lives on in `received` alone
  return received;
}

}  // namespace kbv::ipc
