// WorkerProcess against real children: this test binary re-run as an echo worker
// (KBV_TEST_CHILD=echo), and /bin/sh scripts that crash, hang, exit, flood their log or fork.
// The binary has its own main (instead of gtest_main) so it can act as that child.
#include "kbv/process/worker_process.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "support/scoped_environment.h"

namespace kbv::process {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// ---- the child side ----

// Writes `bytes` of log alternately to stdout and stderr, then a marker last.
void flood_log(std::size_t bytes) {
  const std::string line(1023, 'x');
  for (std::size_t i = 0; i * 1024 < bytes; ++i) {
    const std::string chunk = line + "\n";
    if (write(i % 2 ? 2 : 1, chunk.data(), chunk.size()) != ssize_t(chunk.size())) std::_Exit(5);
  }
  if (write(2, "END-OF-LOG\n", 11) != 11) std::_Exit(5);
}

// Echoes every message back, after doing what its "op" asks. Exits 0 when the parent closes the channel.
int run_echo_worker() {
  if (const char* bytes = std::getenv("KBV_TEST_FLOOD_AT_START")) flood_log(std::stoul(bytes));
  ipc::Channel channel = ipc::open_worker_channel();
  for (;;) {
    ipc::Message m;
    try {
      m = channel.receive();
    } catch (const ipc::ChannelClosed&) {
      return 0;
    }
    const std::string op = m.header.value("op", "echo");
    if (op == "exit") return m.header.value("code", 0);
    if (op == "flood") flood_log(m.header["bytes"].get<std::size_t>());
    if (op == "print") {  // stdio and iostreams both, as candidate code would
      std::printf("printed to stdout\n");
      std::fflush(stdout);
      std::cout << "more stdout" << std::endl;
      std::cerr << "printed to stderr" << std::endl;
    }
    std::vector<ipc::Bytes> views(m.blobs.begin(), m.blobs.end());
    channel.send(m.header, views);
  }
}

// ---- helpers ----

std::string self_exe() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) std::abort();
  return std::string(path, static_cast<std::size_t>(n));
}

WorkerProcess start_echo(std::vector<std::pair<std::string, std::string>> env = {}, std::size_t tail = 64 * 1024) {
  env.emplace_back("KBV_TEST_CHILD", "echo");
  return WorkerProcess::start({self_exe()}, env, tail);
}

WorkerProcess start_sh(const std::string& script) { return WorkerProcess::start({"/bin/sh", "-c", script}, {}); }

// True once `pid` no longer runs (gone, or a zombie waiting for a parent that is not us).
bool gone(pid_t pid) {
  for (auto end = Clock::now() + 5s; Clock::now() < end; std::this_thread::sleep_for(10ms)) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    if (text.empty()) return true;
    const char state = text[text.rfind(')') + 2];
    if (state == 'Z' || state == 'X') return true;
  }
  return false;
}

// Drains the child's log until it holds a full line naming a pid.
pid_t pid_from_log(WorkerProcess& worker) {
  for (auto end = Clock::now() + 5s; Clock::now() < end;) {
    if (worker.log_tail().find('\n') != std::string::npos) return std::stoi(worker.log_tail());
    EXPECT_EQ(worker.receive(Clock::now() + 20ms).status, Received::Status::timeout);
  }
  ADD_FAILURE() << "no pid in the log: " << worker.log_tail();
  return -1;
}

std::vector<std::byte> pattern(std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(i * 31 + (i >> 12));
  return bytes;
}

// ---- tests ----

TEST(WorkerProcess, EchoWorkerRoundTripsMessages) {
  WorkerProcess worker = start_echo();
  const auto large = pattern(8u << 20);
  const std::vector<std::byte> empty;
  const ipc::Bytes blobs[] = {large, empty};
  for (int i = 0; i < 3; ++i) {
    worker.send({{"op", "echo"}, {"i", i}}, blobs, Clock::now() + 30s);
    Received r = worker.receive(Clock::now() + 30s);
    ASSERT_EQ(r.status, Received::Status::message) << r.error;
    EXPECT_EQ(r.message.header["i"], i);
    ASSERT_EQ(r.message.blobs.size(), 2u);
    EXPECT_EQ(r.message.blobs[0], large);
    EXPECT_TRUE(r.message.blobs[1].empty());
  }
  worker.send({{"op", "exit"}, {"code", 0}});
  EXPECT_EQ(worker.receive(Clock::now() + 30s).status, Received::Status::closed);
  EXPECT_EQ(worker.wait().describe(), "exited with code 0");
}

TEST(WorkerProcess, LogFloodNeitherBlocksTheReplyNorLosesTheTail) {
  WorkerProcess worker = start_echo({}, 4096);
  worker.send({{"op", "flood"}, {"bytes", 6u << 20}});
  Received r = worker.receive(Clock::now() + 30s);
  ASSERT_EQ(r.status, Received::Status::message) << r.error;
  EXPECT_EQ(r.message.header["op"], "flood");
  ASSERT_EQ(worker.log_tail().size(), 4096u);
  EXPECT_TRUE(worker.log_tail().ends_with("x\nEND-OF-LOG\n")) << worker.log_tail().substr(4000);
}

TEST(WorkerProcess, SendDrainsTheLogOfAChildThatPrintsBeforeReading) {
  // The child floods its log before it reads; the parent's large send blocks on the full command
  // pipe. Without draining the log during send, both would wait for ever.
  WorkerProcess worker = start_echo({{"KBV_TEST_FLOOD_AT_START", std::to_string(8u << 20)}});
  const auto large = pattern(32u << 20);
  const ipc::Bytes blobs[] = {large};
  worker.send({{"op", "echo"}}, blobs, Clock::now() + 30s);
  Received r = worker.receive(Clock::now() + 30s);
  ASSERT_EQ(r.status, Received::Status::message) << r.error;
  EXPECT_EQ(r.message.blobs.at(0), large);
  EXPECT_TRUE(worker.log_tail().ends_with("END-OF-LOG\n"));
}

TEST(WorkerProcess, HungChildTimesOutAndIsKilled) {
  WorkerProcess worker = start_sh("exec sleep 1000");
  const auto begin = Clock::now();
  EXPECT_EQ(worker.receive(begin + 200ms).status, Received::Status::timeout);
  const auto waited = Clock::now() - begin;
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 3s);
  worker.kill();
  worker.kill();  // idempotent
  const ExitStatus status = worker.wait();
  EXPECT_TRUE(status.signaled);
  EXPECT_EQ(status.code, 9);
  EXPECT_EQ(status.describe(), "killed by signal 9 (SIGKILL)");
  EXPECT_EQ(worker.wait().describe(), status.describe());  // idempotent
  worker.kill();                                           // after reaping: a no-op
}

TEST(WorkerProcess, ExitCodeIsReported) {
  WorkerProcess worker = start_sh("echo bye >&2; exit 3");
  Received r = worker.receive(Clock::now() + 10s);
  EXPECT_EQ(r.status, Received::Status::closed);
  EXPECT_NE(r.error.find("frame boundary"), std::string::npos) << r.error;
  EXPECT_EQ(worker.wait().describe(), "exited with code 3");
  EXPECT_EQ(worker.log_tail(), "bye\n");
}

TEST(WorkerProcess, CrashIsReportedWithTheSignalName) {
  WorkerProcess worker = start_sh("kill -SEGV $$");
  EXPECT_EQ(worker.receive(Clock::now() + 10s).status, Received::Status::closed);
  EXPECT_EQ(worker.wait().describe(), "killed by signal 11 (SIGSEGV)");
}

TEST(WorkerProcess, KillTakesDownTheWholeProcessGroup) {
  WorkerProcess worker = start_sh("sleep 1000 & echo $! >&2; wait");
  const pid_t grandchild = pid_from_log(worker);
  ASSERT_GT(grandchild, 0);
  EXPECT_EQ(kill(grandchild, 0), 0) << "the grandchild should be running";
  worker.kill();
  EXPECT_TRUE(worker.wait().signaled);
  EXPECT_TRUE(gone(grandchild));
}

TEST(WorkerProcess, WaitKillsDescendantsLeftBehind) {
  // The grandchild closes fds 3 and 4 so the result pipe reaches EOF when the shell exits.
  WorkerProcess worker = start_sh("sleep 1000 3>&- 4>&- & echo $! >&2; exit 0");
  EXPECT_EQ(worker.receive(Clock::now() + 10s).status, Received::Status::closed);
  const pid_t grandchild = std::stoi(worker.log_tail());
  EXPECT_EQ(worker.wait().describe(), "exited with code 0");
  EXPECT_TRUE(gone(grandchild));
}

TEST(WorkerProcess, EnvironmentIsInheritedWithOverrides) {
  const kbv::testing::ScopedEnvironment inherited("KBV_TEST_INHERITED", "yes");
  const kbv::testing::ScopedEnvironment replaced("KBV_TEST_REPLACED", "old");
  WorkerProcess worker = WorkerProcess::start({"/bin/sh", "-c", "env | grep ^KBV_TEST_ | sort >&2"},
                                              {{"KBV_TEST_REPLACED", "new"}, {"KBV_TEST_ADDED", "a=b"}});
  EXPECT_EQ(worker.receive(Clock::now() + 10s).status, Received::Status::closed);
  EXPECT_EQ(worker.wait().code, 0);
  EXPECT_EQ(worker.log_tail(), "KBV_TEST_ADDED=a=b\nKBV_TEST_INHERITED=yes\nKBV_TEST_REPLACED=new\n");
}

TEST(WorkerProcess, PrintsNeverReachTheResultChannel) {
  WorkerProcess echo = start_echo();
  echo.send({{"op", "print"}});
  Received r = echo.receive(Clock::now() + 30s);
  ASSERT_EQ(r.status, Received::Status::message) << r.error;
  EXPECT_EQ(r.message.header["op"], "print");
  EXPECT_NE(echo.log_tail().find("printed to stdout\n"), std::string::npos) << echo.log_tail();
  EXPECT_NE(echo.log_tail().find("more stdout\n"), std::string::npos);
  EXPECT_NE(echo.log_tail().find("printed to stderr\n"), std::string::npos);

  WorkerProcess sh = start_sh("echo not a frame; echo nor this >&2");
  r = sh.receive(Clock::now() + 10s);
  EXPECT_EQ(r.status, Received::Status::closed) << r.error;  // not malformed: nothing reached fd 4
  EXPECT_EQ(sh.log_tail(), "not a frame\nnor this\n");
}

TEST(WorkerProcess, GarbageOnTheResultFdIsMalformedNotACrash) {
  WorkerProcess worker = start_sh("printf 'garbage that is not a frame' >&4; exec sleep 1000");
  Received r = worker.receive(Clock::now() + 10s);
  EXPECT_EQ(r.status, Received::Status::malformed);
  EXPECT_NE(r.error.find("header length"), std::string::npos) << r.error;
}

TEST(WorkerProcess, ChildGetsDevNullStdinTheChannelAndNoOtherFds) {
  const int leaked = fcntl(2, F_DUPFD, 10);  // no O_CLOEXEC: only the child-side close keeps it out
  ASSERT_GE(leaked, 10);
  const std::string n = std::to_string(leaked);
  WorkerProcess worker = start_sh(
      "readlink /proc/$$/fd/0 >&2; readlink /proc/$$/fd/3 /proc/$$/fd/4 | cut -c1-5 >&2;"
      "test -e /proc/$$/fd/" +
      n + " && echo leaked >&2; exit 0");
  EXPECT_EQ(worker.receive(Clock::now() + 10s).status, Received::Status::closed);
  worker.wait();
  close(leaked);
  EXPECT_EQ(worker.log_tail(), "/dev/null\npipe:\npipe:\n");
}

TEST(WorkerProcess, SendToAChildThatExitedIsChannelClosed) {
  WorkerProcess worker = start_sh("exit 0");
  worker.wait();
  EXPECT_THROW(worker.send({{"op", "echo"}}), ipc::ChannelClosed);
}

TEST(WorkerProcess, SendTimesOutWhenTheChildDoesNotRead) {
  WorkerProcess worker = start_sh("exec sleep 1000");
  const auto large = pattern(16u << 20);
  const ipc::Bytes blobs[] = {large};
  EXPECT_THROW(worker.send({{"op", "echo"}}, blobs, Clock::now() + 200ms), ChannelTimeout);
  EXPECT_THROW(worker.send({{"op", "echo"}}), ipc::ChannelClosed);  // the half-sent frame broke the stream
}

TEST(WorkerProcess, StartRejectsBadArgumentsAndReportsExecFailure) {
  EXPECT_THROW(WorkerProcess::start({"sh"}, {}), std::invalid_argument);
  EXPECT_THROW(WorkerProcess::start({}, {}), std::invalid_argument);
  try {
    WorkerProcess::start({"/nonexistent/kbv-worker"}, {});
    FAIL() << "expected std::system_error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("exec in the child for /nonexistent/kbv-worker"), std::string::npos)
        << e.what();
  }
}

TEST(WorkerProcess, StartForkedRunsItsBodyAsAWorkerWithOnlyTheChannelOpen) {
  const int leaked = fcntl(2, F_DUPFD, 10);  // no O_CLOEXEC, and no exec to close it
  ASSERT_GE(leaked, 10);
  std::printf("unflushed in the parent\n");  // must not be written again by the child
  WorkerProcess worker = WorkerProcess::start_forked([leaked] {
    std::printf("fd %s, parent %d\n", fcntl(leaked, F_GETFD) == -1 ? "closed" : "open", static_cast<int>(getppid()));
    std::fflush(stdout);
    return run_echo_worker();
  });
  close(leaked);
  worker.send({{"op", "echo"}, {"n", 1}});
  Received r = worker.receive(Clock::now() + 10s);
  ASSERT_EQ(r.status, Received::Status::message) << r.error;
  EXPECT_EQ(r.message.header["n"], 1);
  worker.send({{"op", "exit"}, {"code", 7}});
  EXPECT_EQ(worker.receive(Clock::now() + 10s).status, Received::Status::closed);
  EXPECT_EQ(worker.wait().code, 7);
  EXPECT_EQ(worker.log_tail(), "fd closed, parent " + std::to_string(getpid()) + "\n");
}

TEST(WorkerProcess, StartForkedRefusesAProcessOfSeveralThreads) {
  std::atomic<bool> done = false;
  std::thread other([&] {
    while (!done) std::this_thread::sleep_for(1ms);
  });
  EXPECT_FALSE(single_threaded());
  EXPECT_THROW(WorkerProcess::start_forked([] { return 0; }), std::logic_error);
  done = true;
  other.join();
  EXPECT_TRUE(single_threaded());
}

TEST(WorkerProcess, DestructorKillsAndReapsAndMovesTransferOwnership) {
  pid_t pid;
  {
    WorkerProcess first = start_sh("exec sleep 1000");
    pid = first.pid();
    WorkerProcess second = std::move(first);
    EXPECT_EQ(second.pid(), pid);
    std::vector<WorkerProcess> pool;
    pool.push_back(std::move(second));
  }
  EXPECT_TRUE(gone(pid));
  EXPECT_NE(kill(pid, 0), 0) << "reaped, not a zombie";
}

}  // namespace
}  // namespace kbv::process

int main(int argc, char** argv) {
  if (const char* mode = std::getenv("KBV_TEST_CHILD"); mode != nullptr && std::string(mode) == "echo")
    return kbv::process::run_echo_worker();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
