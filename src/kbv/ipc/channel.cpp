#include "kbv/ipc/channel.h"

#include "kbv/common/syscall.h"
#include "kbv/ipc/worker_fds.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace kbv::ipc {
namespace {

// Blob memory is committed (zero-filled) this much ahead of the bytes read into it.
constexpr std::size_t kCommitChunk = 4u << 20;

template <std::size_t N>
void put_le(std::byte* out, std::uint64_t value) {
  for (std::size_t i = 0; i < N; ++i) out[i] = static_cast<std::byte>(value >> (8 * i));
}

template <std::size_t N>
std::uint64_t get_le(const std::byte* in) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < N; ++i) value |= std::to_integer<std::uint64_t>(in[i]) << (8 * i);
  return value;
}

void wait_ready(int fd, short events) {
  pollfd p{fd, events, 0};
  int ready;
  while ((ready = poll(&p, 1, -1)) == -1 && errno == EINTR) {
  }
  if (ready == -1) detail::throw_syscall_error(errno, "poll(&p, 1, -1)", __FILE__, __LINE__);
}

// Blocks SIGPIPE in this thread for the scope of a write and discards the one the write raised, so
// EPIPE reaches us as an error code. Process-wide SIG_IGN would also work but would change the
// behaviour of everything else in the process (and be inherited by every program it execs).
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;  // not ours to discard
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;
  ~SigpipeBlock() {
    if (raised_ && !was_pending_) {
      const timespec zero{};
      // Fails with EAGAIN when SIGPIPE is ignored (then none was generated).
      while (sigtimedwait(&pipe_, nullptr, &zero) == -1 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  void note_epipe() { raised_ = true; }

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
  bool raised_ = false;
};

void check_limit(const char* what, std::uint64_t value, std::uint64_t limit) {
  if (value > limit)
    throw ProtocolError("channel: " + std::string(what) + " " + std::to_string(value) + " exceeds the limit of " +
                        std::to_string(limit));
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void UniqueFd::reset(int fd) noexcept {
  // close() is not retried on EINTR: on Linux the fd is released either way.
  if (fd_ >= 0) KBV_SYSCALL_NOTHROW(close(fd_));
  fd_ = fd;
}

Channel::Channel(int read_fd, int write_fd, ChannelLimits limits)
    : read_fd_(read_fd), write_fd_(write_fd), limits_(limits) {}

// ---- sending ----

void Channel::begin_send(const nlohmann::json& header, std::span<const Bytes> blobs) {
  if (sending()) throw std::logic_error("Channel::begin_send: the previous frame is not sent yet");
  if (!send_error_.empty()) throw ChannelClosed(send_error_);
  if (blobs.size() > UINT32_MAX) throw std::invalid_argument("Channel::send: too many blobs");
  const std::string text = header.dump();
  prefix_.resize(8 + text.size() + 4);
  put_le<8>(prefix_.data(), text.size());
  std::memcpy(prefix_.data() + 8, text.data(), text.size());
  put_le<4>(prefix_.data() + 8 + text.size(), blobs.size());

  blob_lengths_.assign(blobs.size(), {});
  iov_.clear();
  iov_.push_back({prefix_.data(), prefix_.size()});
  for (std::size_t i = 0; i < blobs.size(); ++i) {
    put_le<8>(blob_lengths_[i].data(), blobs[i].size());
    iov_.push_back({blob_lengths_[i].data(), 8});
    // writev takes non-const bases but only reads them.
    if (!blobs[i].empty()) iov_.push_back({const_cast<std::byte*>(blobs[i].data()), blobs[i].size()});
  }
  next_iov_ = 0;
}

Channel::Step Channel::write_step() {
  if (!sending()) return Step::done;
  const int count = static_cast<int>(std::min<std::size_t>(iov_.size() - next_iov_, IOV_MAX));
  ssize_t n;
  {
    SigpipeBlock block;
    n = writev(write_fd_.get(), &iov_[next_iov_], count);
    if (n == -1 && errno == EPIPE) block.note_epipe();
  }
  if (n == -1) {
    if (errno == EINTR) return Step::progress;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Step::would_block;
    if (errno == EPIPE) {
      iov_.clear();
      next_iov_ = 0;
      send_error_ = "channel closed by peer: write failed with EPIPE";
      throw ChannelClosed(send_error_);
    }
    detail::throw_syscall_error(errno, "writev(write_fd, iov, count)", __FILE__, __LINE__);
  }
  // A partial write can end anywhere, even inside an iovec: consume whole pieces, then trim one.
  auto left = static_cast<std::size_t>(n);
  while (left > 0 && left >= iov_[next_iov_].iov_len) left -= iov_[next_iov_++].iov_len;
  if (left > 0) {
    iov_[next_iov_].iov_base = static_cast<std::byte*>(iov_[next_iov_].iov_base) + left;
    iov_[next_iov_].iov_len -= left;
  }
  return sending() ? Step::progress : Step::done;
}

bool Channel::send_some() { return write_step() == Step::done; }

void Channel::abandon_send() {
  if (sending()) send_error_ = "channel: a frame was abandoned half-written";
  iov_.clear();  // drops the views of the caller's blobs
  next_iov_ = 0;
}

void Channel::send(const nlohmann::json& header, std::span<const Bytes> blobs) {
  begin_send(header, blobs);
  for (;;) {
    const Step step = write_step();
    if (step == Step::done) return;
    if (step == Step::would_block) wait_ready(write_fd_.get(), POLLOUT);
  }
}

// ---- receiving ----

void Channel::reset_receive() {
  stage_ = Stage::header_length;
  word_filled_ = 0;
  header_text_.clear();
  filled_ = 0;
  incoming_ = Message{};
}

void Channel::fail_receive(std::exception_ptr error) {
  receive_error_ = error;
  std::rethrow_exception(error);
}

std::string Channel::position() const {
  switch (stage_) {
    case Stage::header_length: return "in the header length";
    case Stage::header:
      return "in the header (" + std::to_string(filled_) + " of " + std::to_string(header_text_.size()) + " bytes)";
    case Stage::blob_count: return "in the blob count";
    case Stage::blob_length: return "in the length of blob " + std::to_string(incoming_.blobs.size());
    case Stage::blob_body:
      return "in blob " + std::to_string(incoming_.blobs.size() - 1) + " (" + std::to_string(filled_) + " of " +
             std::to_string(blob_length_) + " bytes)";
  }
  return "";
}

bool Channel::settle() {
  for (;;) {
    switch (stage_) {
      case Stage::header_length: {
        if (word_filled_ < 8) return false;
        const std::uint64_t length = get_le<8>(word_.data());
        check_limit("header length", length, limits_.max_header_bytes);
        header_text_.assign(length, '\0');
        filled_ = 0;
        stage_ = Stage::header;
        break;
      }
      case Stage::header: {
        if (filled_ < header_text_.size()) return false;
        try {
          incoming_.header = nlohmann::json::parse(header_text_);
        } catch (const nlohmann::json::parse_error& e) {
          throw ProtocolError(std::string("channel: header is not valid JSON: ") + e.what());
        }
        word_filled_ = 0;
        stage_ = Stage::blob_count;
        break;
      }
      case Stage::blob_count:
        if (word_filled_ < 4) return false;
        blob_count_ = static_cast<std::uint32_t>(get_le<4>(word_.data()));
        check_limit("blob count", blob_count_, limits_.max_blob_count);
        if (blob_count_ == 0) return true;
        word_filled_ = 0;
        stage_ = Stage::blob_length;
        break;
      case Stage::blob_length: {
        if (word_filled_ < 8) return false;
        blob_length_ = get_le<8>(word_.data());
        check_limit("blob length", blob_length_, limits_.max_blob_bytes);
        auto& blob = incoming_.blobs.emplace_back();
        try {
          blob.reserve(blob_length_);  // address space only; pages are committed as bytes arrive
        } catch (const std::exception&) {
          throw ProtocolError("channel: cannot reserve " + std::to_string(blob_length_) + " bytes for a blob");
        }
        filled_ = 0;
        stage_ = Stage::blob_body;
        break;
      }
      case Stage::blob_body:
        if (filled_ < blob_length_) return false;
        if (incoming_.blobs.size() == blob_count_) return true;
        word_filled_ = 0;
        stage_ = Stage::blob_length;
        break;
    }
  }
}

Channel::Step Channel::read_step(std::optional<Message>& out) {
  if (receive_error_) std::rethrow_exception(receive_error_);
  // Fixed-size fields are read into word_; the header and blobs straight into their buffers.
  const bool in_word = stage_ == Stage::header_length || stage_ == Stage::blob_count || stage_ == Stage::blob_length;
  std::byte* target;
  std::size_t want;
  if (in_word) {
    target = word_.data() + word_filled_;
    want = (stage_ == Stage::blob_count ? 4 : 8) - word_filled_;
  } else if (stage_ == Stage::header) {
    target = reinterpret_cast<std::byte*>(header_text_.data()) + filled_;
    want = header_text_.size() - filled_;
  } else {
    // Commit (zero-fill) only a chunk ahead of the data, never the whole announced length.
    auto& blob = incoming_.blobs.back();
    if (blob.size() == filled_) blob.resize(filled_ + std::min<std::uint64_t>(blob_length_ - filled_, kCommitChunk));
    target = blob.data() + filled_;
    want = blob.size() - filled_;
  }
  const ssize_t n = read(read_fd_.get(), target, want);
  if (n == -1) {
    if (errno == EINTR) return Step::progress;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Step::would_block;
    detail::throw_syscall_error(errno, "read(read_fd, target, want)", __FILE__, __LINE__);
  }
  if (n == 0) {
    if (stage_ == Stage::header_length && word_filled_ == 0)
      fail_receive(std::make_exception_ptr(ChannelClosed("channel closed by peer at a frame boundary")));
    fail_receive(std::make_exception_ptr(ChannelClosed("channel closed by peer mid-frame, " + position())));
  }
  (in_word ? word_filled_ : filled_) += static_cast<std::size_t>(n);
  bool complete;
  try {
    complete = settle();
  } catch (const ProtocolError&) {
    fail_receive(std::current_exception());
  }
  if (!complete) return Step::progress;
  out = std::move(incoming_);
  reset_receive();
  return Step::done;
}

std::optional<Message> Channel::receive_some() {
  std::optional<Message> out;
  read_step(out);
  return out;
}

Message Channel::receive() {
  std::optional<Message> out;
  for (;;) {
    const Step step = read_step(out);
    if (step == Step::done) return std::move(*out);
    if (step == Step::would_block) wait_ready(read_fd_.get(), POLLIN);
  }
}

Channel open_worker_channel() {
  KBV_SYSCALL(fcntl(kCommandFd, F_SETFD, FD_CLOEXEC));
  KBV_SYSCALL(fcntl(kResultFd, F_SETFD, FD_CLOEXEC));
  return Channel(kCommandFd, kResultFd);
}

}  // namespace kbv::ipc
