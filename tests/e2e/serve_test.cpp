// `kbv serve` as an RL pipeline uses it: the real binary listening on loopback, concurrent clients
// over HTTP, the store read back. Every request answered once, every answered evaluation one record.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kExamples = KBV_EXAMPLES_DIR;

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Response {
  int status = 0;
  std::string head;
  json body;
};

// One request over a fresh connection, as kbv serve answers (Connection: close).
Response http(int port, const std::string& method, const std::string& path, const std::string& body = "") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return {};
  }
  const std::string request = method + " " + path +
                              " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += n;
  }
  std::string text;
  char chunk[65536];
  for (ssize_t n; (n = ::recv(fd, chunk, sizeof chunk, 0)) > 0;) text.append(chunk, n);
  ::close(fd);
  Response r;
  const auto end = text.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  r.head = text.substr(0, end);
  r.status = std::stoi(text.substr(9, 3));
  r.body = json::parse(text.substr(end + 4), nullptr, false);
  return r;
}

std::int64_t scalar(const fs::path& db, const std::string& query) {
  SQLite::Database store(db.string(), SQLite::OPEN_READONLY, 5000);
  SQLite::Statement s(store, query);
  s.executeStep();
  return s.getColumn(0).getInt64();
}

class Serve : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kbv_serve_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = dir_ / "serve.sqlite";
    problem_ = (kExamples / "problems/1_ReLU.py").string();
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    fs::remove_all(dir_);
  }

  // Starts kbv serve on a free port; waits for the line that names it.
  void start(const std::vector<std::string>& extra = {}) {
    log_ = dir_ / "serve.log";
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      std::vector<std::string> args = {KBV_BINARY, "serve", "--port", "0", "--db", db_.string()};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(KBV_BINARY, argv.data());
      _exit(127);
    }
    const std::regex listening(R"(listening on http://127\.0\.0\.1:(\d+))");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    std::smatch m;
    for (std::string log; std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
      log = slurp(log_);
      if (std::regex_search(log, m, listening)) {
        port_ = std::stoi(m[1]);
        return;
      }
    }
    FAIL() << "kbv serve did not start: " << slurp(log_);
  }

  int stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  json by_path(const std::string& candidate) const {
    return {{"problem", problem_}, {"candidate_source", slurp(kExamples / "candidates/1_ReLU" / candidate)}};
  }

  fs::path dir_, db_, log_;
  std::string problem_;
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST_F(Serve, ConcurrentRequestsAreEachAnsweredWithOneRecordAndShareTheBaseline) {
  start();
  const Response health = http(port_, "GET", "/health");
  ASSERT_EQ(health.status, 200) << health.head;
  EXPECT_EQ(health.body["status"], "ok");

  // Two by the problem's path, one with the problem sent as text (KernelBench's name and level),
  // one cheat: four clients at once.
  std::vector<json> requests = {by_path("cpu_honest.py"),
                                by_path("cpu_honest.py"),
                                by_path("cpu_identity.py"),
                                {{"problem_source", slurp(problem_)},
                                 {"problem_name", "1_ReLU.py"},
                                 {"level", 1},
                                 {"candidate_source", slurp(kExamples / "candidates/1_ReLU/cpu_honest.py")},
                                 {"protocol", "kernelbench"},
                                 {"run", "policy-step-7"},
                                 {"sample", 3}}};
  std::vector<Response> answers(requests.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < requests.size(); ++i) {
    clients.emplace_back([&, i] { answers[i] = http(port_, "POST", "/evaluate", requests[i].dump()); });
  }
  for (std::thread& c : clients) c.join();
  std::set<std::string> ids;
  for (size_t i = 0; i < answers.size(); ++i) {
    ASSERT_EQ(answers[i].status, 200) << answers[i].head << "\n" << answers[i].body.dump() << "\n" << slurp(log_);
    const json& record = answers[i].body["record"];
    if (i == 2) {
      EXPECT_NE(record["verdict"], "pass") << record.dump();  // the identity "ReLU" on hidden inputs
    } else {
      EXPECT_EQ(record["verdict"], "pass") << record.dump();
    }
    EXPECT_EQ(record["protocol"]["name"], i == 3 ? "kernelbench" : "verified");
    EXPECT_TRUE(answers[i].body["stored"]);
    EXPECT_GE(answers[i].body["evaluation_seconds"].get<double>(), 0.0);
    ids.insert(answers[i].body["id"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 4u);

  const Response metrics = http(port_, "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.body["evaluations"]["done"], 4) << metrics.body.dump();
  EXPECT_EQ(metrics.body["evaluations"]["last_minute"], 4);
  EXPECT_EQ(metrics.body["queue"]["depth"], 0);
  const json& lane = metrics.body["lanes"].at(0);
  EXPECT_EQ(lane["gpu"], "cpu");
  EXPECT_EQ(lane["warm_problems"], 2) << "the problem by path under verified, and as text under kernelbench";
  EXPECT_GT(lane["busy_share"].get<double>(), 0.0);
  EXPECT_LE(lane["busy_share"].get<double>(), 1.0);
  EXPECT_TRUE(metrics.body["stage_seconds"].contains("checks"));

  EXPECT_EQ(stop(), 0) << slurp(log_);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM records"), 4);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(DISTINCT candidate_id) FROM records"), 4);
  // Its lane's use, kept on the way out: kbv report gives the service's device busy share.
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM sessions WHERE command = 'serve' AND lanes LIKE '%\"evaluations\":4%'"),
            1);
  // One baseline per (problem, protocol): the three verified requests of one problem share it.
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM baselines"), 2);
  EXPECT_EQ(scalar(db_,
                   "SELECT COUNT(*) FROM candidates c JOIN runs r ON r.id = c.run_id "
                   "WHERE r.name = 'policy-step-7' AND c.sample = 3"),
            1);
  // The problem's file and its text are two problems; the text, named as KernelBench names it, has its level.
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM problems"), 2);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM problems WHERE level = 1 AND number = 1 AND name = 'ReLU'"), 1);
}

TEST_F(Serve, RequestsThatCannotBeEvaluatedAsSentAreNamed) {
  start();
  const std::string honest = slurp(kExamples / "candidates/1_ReLU/cpu_honest.py");
  const auto status_and_error = [&](const std::string& method, const std::string& path, const std::string& body) {
    const Response r = http(port_, method, path, body);
    return std::make_pair(r.status, r.body.value("error", std::string()));
  };
  const auto expect = [&](int status, const std::string& says, const std::string& body,
                          const std::string& method = "POST", const std::string& path = "/evaluate") {
    const auto [got, error] = status_and_error(method, path, body);
    EXPECT_EQ(got, status) << body.substr(0, 200) << ": " << error;
    EXPECT_NE(error.find(says), std::string::npos) << error;
  };
  expect(400, "not JSON", "{");
  expect(400, "candidate_source", json{{"problem", problem_}}.dump());
  expect(400, "name the problem", json{{"candidate_source", honest}}.dump());
  expect(400, "no problem file", json{{"problem", (dir_ / "absent.py").string()}, {"candidate_source", honest}}.dump());
  expect(400, "verified or kernelbench",
         json{{"problem", problem_}, {"candidate_source", honest}, {"protocol", "fast"}}.dump());
  expect(400, "unknown field `candidate`", json{{"problem", problem_}, {"candidate", "x.py"}}.dump());
  expect(400, "file name",
         json{{"problem_source", slurp(problem_)}, {"problem_name", "../x.py"}, {"candidate_source", honest}}.dump());
  expect(405, "POST /evaluate", "", "GET");
  expect(404, "no route", "", "GET", "/rewards");

  // A candidate without ModelNew is the candidate's fault: a record, not an error.
  const Response broken = http(port_, "POST", "/evaluate", by_path("no_modelnew.py").dump());
  ASSERT_EQ(broken.status, 200) << broken.body.dump();
  EXPECT_NE(broken.body["record"]["verdict"], "pass");
  EXPECT_EQ(stop(), 0);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM records"), 1);
}

// --problems: only problem files under the folder, by path; no problem text, no way out by `..`.
TEST_F(Serve, WithAProblemsFolderOnlyItsFilesAreTaken) {
  start({"--problems", (kExamples / "problems").string()});
  const std::string honest = slurp(kExamples / "candidates/1_ReLU/cpu_honest.py");
  const Response inside = http(port_, "POST", "/evaluate", by_path("cpu_honest.py").dump());
  ASSERT_EQ(inside.status, 200) << inside.body.dump();
  EXPECT_EQ(inside.body["record"]["verdict"], "pass");
  fs::create_directories(dir_ / "elsewhere");
  fs::copy_file(problem_, dir_ / "elsewhere/1_ReLU.py");
  for (const std::string& outside : {(dir_ / "elsewhere/1_ReLU.py").string(),
                                     (kExamples / "problems/../../tests/audit/problems/7_LogOfInput.py").string()}) {
    const Response refused =
        http(port_, "POST", "/evaluate", json{{"problem", outside}, {"candidate_source", honest}}.dump());
    EXPECT_EQ(refused.status, 400) << outside;
    EXPECT_NE(refused.body.value("error", "").find("takes problems under"), std::string::npos) << refused.body.dump();
  }
  const Response text =
      http(port_, "POST", "/evaluate", json{{"problem_source", slurp(problem_)}, {"candidate_source", honest}}.dump());
  EXPECT_EQ(text.status, 400);
  EXPECT_NE(text.body.value("error", "").find("not as text"), std::string::npos) << text.body.dump();
  EXPECT_EQ(stop(), 0);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM records"), 1);
}

TEST_F(Serve, AFullQueueAnswersBusyAndHoldsNoMore) {
  start({"--queue", "1"});
  // One lane: one evaluated, one held; the others, sent while those take seconds, are refused.
  std::vector<Response> answers(5);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < answers.size(); ++i) {
    clients.emplace_back([&, i] { answers[i] = http(port_, "POST", "/evaluate", by_path("cpu_honest.py").dump()); });
  }
  for (std::thread& c : clients) c.join();
  int answered = 0, busy = 0;
  for (const Response& r : answers) {
    if (r.status == 200) {
      ++answered;
      EXPECT_EQ(r.body["record"]["verdict"], "pass");
    } else {
      ASSERT_EQ(r.status, 503) << r.body.dump();
      EXPECT_TRUE(r.body["busy"]);
      EXPECT_NE(r.head.find("Retry-After: 1"), std::string::npos) << r.head;
      ++busy;
    }
  }
  EXPECT_GE(busy, 3);
  EXPECT_GE(answered, 1);
  EXPECT_EQ(http(port_, "GET", "/metrics").body["evaluations"]["refused_busy"], busy);
  EXPECT_EQ(stop(), 0);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM records"), answered);
  // A refused request leaves nothing behind: no candidate row, no source.
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM candidates"), answered);
  EXPECT_EQ(std::distance(fs::directory_iterator(db_.string() + ".files/candidates"), fs::directory_iterator()),
            answered);
}

TEST_F(Serve, ASignalStopsItAfterAnsweringWhatItHolds) {
  start();
  Response held;
  std::thread client([&] { held = http(port_, "POST", "/evaluate", by_path("cpu_honest.py").dump()); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (http(port_, "GET", "/metrics").body["queue"]["evaluating"] != 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid_, SIGTERM);
  // Stopping: no new request is taken, the held one is answered.
  Response health;
  while ((health = http(port_, "GET", "/health")).status == 200)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (health.status == 503) {
    EXPECT_EQ(health.body["status"], "stopping");
    const Response late = http(port_, "POST", "/evaluate", by_path("cpu_honest.py").dump());
    EXPECT_TRUE(late.status == 503 || late.status == 0) << late.body.dump();  // 0: it had closed already
  }
  client.join();
  ASSERT_EQ(held.status, 200) << slurp(log_);
  EXPECT_EQ(held.body["record"]["verdict"], "pass");
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(log_);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM records"), 1);
}

// The service writes a problem's row once, and again each time its file's content changes: the
// store's content key is always that of the file last evaluated, back to the first content too.
TEST_F(Serve, AProblemFileEditedBetweenRequestsKeepsItsRowAndItsContentKey) {
  const fs::path problem = dir_ / "1_ReLU.py";
  fs::copy_file(problem_, problem);
  problem_ = problem.string();
  const std::string first = slurp(problem), edited = first + "\n# edited\n";
  start();
  const auto key_after = [&](const std::string& content) {
    std::ofstream(problem) << content;
    const Response r = http(port_, "POST", "/evaluate", by_path("cpu_honest.py").dump());
    EXPECT_EQ(r.status, 200) << r.body.dump();
    SQLite::Database store(db_.string(), SQLite::OPEN_READONLY, 5000);
    SQLite::Statement s(store, "SELECT content_key FROM problems WHERE path = ?");
    s.bind(1, problem.string());
    EXPECT_TRUE(s.executeStep());
    return s.getColumn(0).getString();
  };
  const std::string original = key_after(first);
  EXPECT_EQ(key_after(first), original);
  EXPECT_NE(key_after(edited), original);
  EXPECT_EQ(key_after(first), original);
  EXPECT_EQ(stop(), 0);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM problems"), 1);
  EXPECT_EQ(scalar(db_, "SELECT COUNT(*) FROM records"), 4);
}

// A request's candidate sees its own source only: another request's, beside it on the serving
// machine, is out of its sandbox's sight (read, it would turn this candidate's outputs to zeros).
TEST_F(Serve, ACandidateCannotReadAnotherRequestsSource) {
  if (geteuid() != 0) GTEST_SKIP() << "the sandbox needs root";
  start();
  const Response first = http(port_, "POST", "/evaluate", by_path("cpu_honest.py").dump());
  ASSERT_EQ(first.status, 200);
  const std::string id = first.body["id"];
  const fs::path candidates = db_.string() + ".files/candidates";
  ASSERT_TRUE(fs::exists(candidates / id / "candidate.py"));
  std::string spy = slurp(kExamples / "candidates/1_ReLU/cpu_honest.py");
  spy = "import os\n_seen = []\ntry:\n    _seen.append(open(" +
        json((candidates / id / "candidate.py").string()).dump() +
        ").read())\nexcept OSError:\n    pass\ntry:\n    _seen += [n for n in os.listdir(" +
        json(candidates.string()).dump() + ") if n == " + json(id).dump() + "]\nexcept OSError:\n    pass\n" + spy;
  spy.replace(spy.find("return self.kernel.relu_forward(x)"), std::string("return self.kernel.relu_forward(x)").size(),
              "return self.kernel.relu_forward(x) * (0 if _seen else 1)");
  const Response second =
      http(port_, "POST", "/evaluate", json{{"problem", problem_}, {"candidate_source", spy}}.dump());
  ASSERT_EQ(second.status, 200) << second.body.dump();
  // On a failure, the findings and the CPU ledger say why (CI once read untimed_work here, under load).
  EXPECT_EQ(second.body["record"]["verdict"], "pass")
      << second.body["record"].value("verdict_reason", "") << "\n"
      << second.body["record"].value("findings", json()).dump() << "\n"
      << second.body["record"].value(json::json_pointer("/timing/candidate/cpu"), json()).dump();
  EXPECT_EQ(stop(), 0);
}

}  // namespace
