// Framed messages over a pair of pipe fds: the parent<->worker protocol's transport.
//
// Frame (all integers little-endian):
//   u64 header length | header JSON text | u32 blob count | per blob: u64 length, bytes
// The header carries the command or result; blobs carry raw bytes (tensor storage) that never pass
// through JSON. Nothing in a frame is trusted on receipt: the candidate worker runs arbitrary code and
// can write to its result fd directly, so every length is checked against ChannelLimits and a frame
// that breaks the format raises ProtocolError rather than crashing or exhausting the parent.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/uio.h>

namespace kbv::ipc {

using Bytes = std::span<const std::byte>;

struct Message {
  nlohmann::json header;
  std::vector<std::vector<std::byte>> blobs;
};

// The peer is gone: EOF on receive (the message says whether at a frame boundary or mid-frame),
// EPIPE on send.
class ChannelClosed : public std::runtime_error {
  using runtime_error::runtime_error;
};

// The peer sent bytes that are not a valid frame (bad JSON, a length over the limits). The receive
// side of the channel is unusable afterwards: the stream has lost its framing.
class ProtocolError : public std::runtime_error {
  using runtime_error::runtime_error;
};

// What a receiver accepts before it allocates. Blob memory is reserved (address space only) when the
// length arrives and committed as bytes arrive, so a peer that announces a huge blob and sends nothing
// costs nothing; these limits bound what a peer can make us reserve at all.
struct ChannelLimits {
  std::uint64_t max_header_bytes = 64ull << 20;
  std::uint32_t max_blob_count = 1u << 16;
  std::uint64_t max_blob_bytes = 1ull << 40;
};

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) noexcept;
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// A framed channel over two fds it owns (read from one, write to the other). Either fd may be
// blocking or O_NONBLOCK; the blocking calls poll when a non-blocking fd is not ready.
// One thread may send while another receives; each direction is used by one thread at a time.
// A SIGPIPE raised by a write to a closed pipe is blocked and discarded in the sending thread only
// (no process-wide SIG_IGN), so a dead peer surfaces as ChannelClosed and never kills the process.
class Channel {
 public:
  Channel(int read_fd, int write_fd, ChannelLimits limits = {});

  // Blocking: writes the whole frame (partial writes, EINTR, EAGAIN handled). Blobs are written from
  // the caller's memory without copying. Throws ChannelClosed on EPIPE.
  void send(const nlohmann::json& header, std::span<const Bytes> blobs = {});
  // Blocking: reads one whole frame. Throws ChannelClosed on EOF, ProtocolError on a malformed frame.
  Message receive();

  // Building blocks for a caller that multiplexes several fds with poll (WorkerProcess drains a log
  // pipe meanwhile). begin_send() encodes the header and keeps views of the blobs, which must stay
  // alive until send_some() returns true; each send_some() makes at most one write (call it when
  // write_fd() polls writable, or on a blocking fd). abandon_send() drops a frame half-written; the
  // peer then sees a broken stream, so only do it to a peer being given up on.
  void begin_send(const nlohmann::json& header, std::span<const Bytes> blobs = {});
  bool send_some();
  bool sending() const { return next_iov_ < iov_.size(); }
  void abandon_send();
  // At most one read (call it when read_fd() polls readable); returns a message once one completes.
  std::optional<Message> receive_some();

  int read_fd() const { return read_fd_.get(); }
  int write_fd() const { return write_fd_.get(); }

 private:
  enum class Step { progress, would_block, done };
  enum class Stage { header_length, header, blob_count, blob_length, blob_body };

  Step write_step();
  Step read_step(std::optional<Message>& out);
  bool settle();  // advances past every complete field; true once the message is complete
  void reset_receive();
  std::string position() const;  // where in the frame the reader stands, for error messages
  [[noreturn]] void fail_receive(std::exception_ptr error);

  UniqueFd read_fd_;
  UniqueFd write_fd_;
  ChannelLimits limits_;

  // Outgoing frame: one iovec per piece; the blobs are the caller's memory.
  std::vector<std::byte> prefix_;
  std::vector<std::array<std::byte, 8>> blob_lengths_;
  std::vector<iovec> iov_;
  std::size_t next_iov_ = 0;
  std::string send_error_;  // set once the write side is unusable; later sends throw ChannelClosed with it

  // Incoming frame, decoded as bytes arrive.
  Stage stage_ = Stage::header_length;
  std::array<std::byte, 8> word_{};
  std::size_t word_filled_ = 0;
  std::string header_text_;
  std::size_t filled_ = 0;  // bytes of header_text_ or of the current blob received so far
  std::uint32_t blob_count_ = 0;
  std::uint64_t blob_length_ = 0;
  Message incoming_;
  std::exception_ptr receive_error_;  // once the stream is broken, every later receive rethrows it
};

// The worker (child) side: WorkerProcess passes the channel on fixed fds.

// Every reply carries the nonce of the command it answers (the parent draws one per command): a
// frame that the candidate's code wrote to the result fd ahead of the worker cannot answer a
// command it has not seen.
inline constexpr const char* kNonceField = "nonce";

// Builds the worker's Channel over kCommandFd/kResultFd and marks both close-on-exec, so a compiler
// or any other program the worker starts cannot read commands or forge results.
Channel open_worker_channel();

}  // namespace kbv::ipc
