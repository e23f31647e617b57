// kbv-pch-c++, the compiler candidates' builds run (eval/extension_cache.h): called as ninja calls
// it for load_inline's main.cpp, it builds torch/extension.h's precompiled copy once, and the next
// compile with the same flags uses it (GCC's -H marks a used copy with '!'), whatever the
// extension's name; the objects are the same as without it. Other calls reach the real compiler.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Ran {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Ran run(const std::string& command) {
  Ran ran;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return ran;
  std::array<char, 4096> buffer{};
  for (size_t n; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) ran.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return ran;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PrecompiledTorchHeader, BuiltOnceThenUsedWhateverTheExtensionName) {
  const fs::path dir = fs::temp_directory_path() / ("kbv_pch_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // load_inline's main.cpp: the header it prepends, then the candidate's own include of it.
  std::ofstream(dir / "main.cpp") << "#include <torch/extension.h>\n#include <torch/extension.h>\n"
                                     "at::Tensor twice(const at::Tensor& x) { return x * 2; }\n";
  const Ran includes =
      run(std::string(KBV_PYTHON) +
          " -c \"import sysconfig, torch.utils.cpp_extension as c; "
          "print(' '.join('-isystem ' + d for d in c.include_paths() + [sysconfig.get_paths()['include']]))\"");
  ASSERT_EQ(includes.exit_code, 0) << includes.output;
  const size_t line = includes.output.find("-isystem");  // after whatever torch warns on import
  ASSERT_NE(line, std::string::npos) << includes.output;
  const std::string flags = "-DTORCH_API_INCLUDE_EXTENSION_H " +
                            includes.output.substr(line, includes.output.find('\n', line) - line) +
                            " -fPIC -std=c++17 -O1";
  const fs::path wrapper = fs::path(KBV_BINARY).parent_path() / "kbv-pch-c++";
  const std::string env = "KBV_PCH_DIR='" + (dir / "pch").string() + "' ";
  const auto compile = [&](const std::string& name, const std::string& object, const std::string& extra) {
    return run(env + wrapper.string() + " -MMD -MF '" + (dir / (object + ".d")).string() +
               "' -DTORCH_EXTENSION_NAME=" + name + " " + flags + " " + extra + " -c '" + (dir / "main.cpp").string() +
               "' -o '" + (dir / object).string() + "'");
  };

  const Ran first = compile("first", "first.o", "");  // builds the copy, then compiles with it
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::vector<fs::path> copies;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "pch")) {
    if (entry.path().filename() == "extension.h.gch") copies.push_back(entry.path());
  }
  ASSERT_EQ(copies.size(), 1u) << "no precompiled torch/extension.h under " << dir / "pch";

  const Ran second = compile("second", "second.o", "-H");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("! " + copies[0].string()), std::string::npos) << second.output.substr(0, 2000);

  const Ran plain = run("c++ -DTORCH_EXTENSION_NAME=first " + flags + " -c '" + (dir / "main.cpp").string() + "' -o '" +
                        (dir / "plain.o").string() + "'");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(slurp(dir / "first.o"), slurp(dir / "plain.o"));  // the same object as without the copy
  fs::remove_all(dir);
}

// torch asks the compiler what it is on every load_inline, a cached one included: the wrapper
// answers as the real compiler does (its front passes anything but a compile straight through).
TEST(PrecompiledTorchHeader, VersionQuestionsAnsweredByTheRealCompiler) {
  const fs::path wrapper = fs::path(KBV_BINARY).parent_path() / "kbv-pch-c++";
  for (const std::string question : {"-dumpfullversion -dumpversion", "-v"}) {
    const Ran real = run("c++ " + question);
    const Ran wrapped = run(wrapper.string() + " " + question);
    ASSERT_EQ(real.exit_code, 0) << real.output;
    EXPECT_EQ(wrapped.exit_code, 0) << wrapped.output;
    EXPECT_EQ(wrapped.output, real.output) << question;
  }
}

}  // namespace
