// Channel over real pipes: framing, large blobs written while the other end reads, EOF and malformed
// frames, a dead reader. No mocks: every test moves bytes through the kernel.
#include "kbv/ipc/channel.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <string>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace kbv::ipc {
namespace {

struct Pipe {
  UniqueFd read, write;
};

Pipe make_pipe(int flags = 0) {
  int fds[2];
  EXPECT_EQ(pipe2(fds, O_CLOEXEC | flags), 0);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Two channels wired like parent and worker: each reads what the other writes.
struct ChannelPair {
  Channel parent, child;
};

ChannelPair make_channel_pair(int flags = 0) {
  Pipe down = make_pipe(flags), up = make_pipe(flags);
  return {Channel(up.read.release(), down.write.release()), Channel(down.read.release(), up.write.release())};
}

std::vector<std::byte> pattern(std::size_t size, unsigned seed) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((i * 2654435761u + seed) >> 13);
  return bytes;
}

std::vector<std::byte> as_bytes(const std::string& text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  return {p, p + text.size()};
}

// The frame spelled out by hand, independently of Channel's encoder.
std::string frame(const std::string& header, const std::vector<std::string>& blobs) {
  auto le = [](std::uint64_t value, int width) {
    std::string out;
    for (int i = 0; i < width; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
    return out;
  };
  std::string out = le(header.size(), 8) + header + le(blobs.size(), 4);
  for (const auto& blob : blobs) out += le(blob.size(), 8) + blob;
  return out;
}

void write_all(int fd, const std::string& bytes) {
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
}

void round_trip_large(int flags) {
  auto [parent, child] = make_channel_pair(flags);
  const auto small = as_bytes("abc");
  const std::vector<std::byte> empty;
  const auto large = pattern(64u << 20, 7);
  const auto tail = pattern(12345, 3);
  const nlohmann::json header = {{"op", "result"}, {"shape", {4, 1024, 4096}}, {"name", "üñí"}};
  std::thread sender([&] {
    const Bytes blobs[] = {small, empty, large, tail};
    child.send(header, blobs);
  });
  const Message m = parent.receive();
  sender.join();
  EXPECT_EQ(m.header, header);
  ASSERT_EQ(m.blobs.size(), 4u);
  EXPECT_EQ(m.blobs[0], small);
  EXPECT_TRUE(m.blobs[1].empty());
  ASSERT_EQ(m.blobs[2].size(), large.size());
  EXPECT_EQ(std::memcmp(m.blobs[2].data(), large.data(), large.size()), 0);
  EXPECT_EQ(m.blobs[3], tail);
}

TEST(Channel, RoundTripsHeaderAndBlobsIncludingEmptyAndLarge) { round_trip_large(0); }

TEST(Channel, RoundTripsOverNonBlockingFds) { round_trip_large(O_NONBLOCK); }

TEST(Channel, EncodesTheDocumentedFrame) {
  Pipe pipe = make_pipe();
  Channel channel(-1, pipe.write.release());
  const auto blob = as_bytes("xyz");
  const Bytes blobs[] = {blob, {}};
  channel.send({{"k", 1}}, blobs);
  const std::string expected = frame(R"({"k":1})", {"xyz", ""});
  std::string got(expected.size() + 1, '\0');
  ASSERT_EQ(read(pipe.read.get(), got.data(), got.size()), ssize_t(expected.size()));
  got.resize(expected.size());
  EXPECT_EQ(got, expected);
}

TEST(Channel, KeepsMessageBoundaries) {
  auto [parent, child] = make_channel_pair();
  const auto one = as_bytes("1");
  const Bytes single[] = {one};
  child.send({{"n", 0}});
  child.send({{"n", 1}}, single);
  child.send({{"n", 2}});
  for (int n = 0; n < 3; ++n) {
    const Message m = parent.receive();
    EXPECT_EQ(m.header["n"], n);
    EXPECT_EQ(m.blobs.size(), n == 1 ? 1u : 0u);
  }
}

TEST(Channel, AssemblesAFrameArrivingByteByByte) {
  Pipe pipe = make_pipe(O_NONBLOCK);
  Channel channel(pipe.read.release(), -1);
  const std::string bytes = frame(R"({"op":"x"})", {"", "hello"});
  EXPECT_FALSE(channel.receive_some().has_value());  // nothing there: would block, no message
  for (std::size_t i = 0; i + 1 < bytes.size(); ++i) {
    write_all(pipe.write.get(), bytes.substr(i, 1));
    EXPECT_FALSE(channel.receive_some().has_value()) << "byte " << i;
  }
  write_all(pipe.write.get(), bytes.substr(bytes.size() - 1));
  std::optional<Message> m = channel.receive_some();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->header["op"], "x");
  ASSERT_EQ(m->blobs.size(), 2u);
  EXPECT_EQ(m->blobs[1], as_bytes("hello"));
}

TEST(Channel, EofAtAFrameBoundaryIsChannelClosed) {
  auto [parent, child] = make_channel_pair();
  child.send({{"last", true}});
  { Channel gone = std::move(child); }  // closes the child's ends
  EXPECT_EQ(parent.receive().header["last"], true);
  try {
    parent.receive();
    FAIL() << "expected ChannelClosed";
  } catch (const ChannelClosed& e) {
    EXPECT_NE(std::string(e.what()).find("frame boundary"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parent.receive(), ChannelClosed);  // stays closed
}

std::string closed_message(const std::string& bytes) {
  Pipe pipe = make_pipe();
  Channel channel(pipe.read.release(), -1);
  write_all(pipe.write.get(), bytes);
  pipe.write.reset();
  try {
    channel.receive();
  } catch (const ChannelClosed& e) {
    return e.what();
  }
  return "no ChannelClosed";
}

TEST(Channel, TruncatedFrameIsChannelClosedMidFrame) {
  const std::string whole = frame(R"({"op":"result"})", {"0123456789"});
  const std::string in_header = closed_message(whole.substr(0, 12));
  EXPECT_NE(in_header.find("mid-frame"), std::string::npos) << in_header;
  EXPECT_NE(in_header.find("in the header (4 of 15 bytes)"), std::string::npos) << in_header;
  const std::string in_blob = closed_message(whole.substr(0, whole.size() - 3));
  EXPECT_NE(in_blob.find("mid-frame, in blob 0 (7 of 10 bytes)"), std::string::npos) << in_blob;
  const std::string in_length = closed_message(whole.substr(0, 3));
  EXPECT_NE(in_length.find("mid-frame, in the header length"), std::string::npos) << in_length;
}

std::string protocol_error(const std::string& bytes, ChannelLimits limits = {}) {
  Pipe pipe = make_pipe();
  Channel channel(pipe.read.release(), -1, limits);
  write_all(pipe.write.get(), bytes);
  pipe.write.reset();
  try {
    channel.receive();
  } catch (const ProtocolError& e) {
    EXPECT_THROW(channel.receive(), ProtocolError);  // the stream has lost its framing for good
    return e.what();
  }
  return "no ProtocolError";
}

TEST(Channel, MalformedFramesAreProtocolErrors) {
  EXPECT_NE(protocol_error(frame("{not json", {})).find("not valid JSON"), std::string::npos);
  // Bytes that are not a frame at all read as an absurd header length; nothing is allocated for it.
  EXPECT_NE(protocol_error("garbage that is not a frame").find("header length"), std::string::npos);
  ChannelLimits small;
  small.max_blob_count = 2;
  small.max_blob_bytes = 8;
  EXPECT_NE(protocol_error(frame("{}", {"a", "b", "c"}), small).find("blob count 3"), std::string::npos);
  EXPECT_NE(protocol_error(frame("{}", {"123456789"}), small).find("blob length 9"), std::string::npos);
}

TEST(Channel, SendToAClosedReaderIsChannelClosedNotSigpipe) {
  auto [parent, child] = make_channel_pair();
  { Channel gone = std::move(parent); }
  const auto blob = pattern(1u << 20, 1);
  const Bytes blobs[] = {blob};
  EXPECT_THROW(child.send({{"op", "result"}}, blobs), ChannelClosed);  // the test process survives
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0) << "the SIGPIPE of the failed write must be consumed";
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  EXPECT_EQ(sigismember(&mask, SIGPIPE), 0) << "the signal mask must be restored";
  EXPECT_THROW(child.send({{"op", "again"}}), ChannelClosed);
}

}  // namespace
}  // namespace kbv::ipc
