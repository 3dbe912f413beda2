// End to end: pages served on loopback by `python3 -m http.server`, crawled by
// `wget --recursive --warc-file`, and the WARC it writes fed to `neardup run` and
// `neardup baseline` (the real-pages pipeline of experiments/real_docs.sh, on a tiny tree).
// Skipped, saying why, when wget or python3 is not installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "tests/binary_test.h"
#include "tests/groups_file.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

bool Have(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

// `n` words of a deterministic vocabulary, different for each seed.
std::string Words(int seed, int n) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::string out;
  for (int i = 0; i < n; ++i) out += "w" + std::to_string(rng() % 5000) + (i % 12 == 11 ? ".\n" : " ");
  return out;
}

class WarcTest : public BinaryTest {
 protected:
  void TearDown() override {
    if (server_pid_ > 0) ::kill(server_pid_, SIGTERM);
    if (std::getenv("KEEP") == nullptr) BinaryTest::TearDown();
  }

  // A manual in two versions: three chapters each, the second version changing one sentence of
  // each chapter (near-duplicates across versions, nothing else alike), an index per version, a
  // picture (not HTML) and a link to a page that does not exist (404).
  void MakeSite() {
    for (int v = 1; v <= 2; ++v) {
      const fs::path dir = dir_ / "site" / "manual" / ("v" + std::to_string(v));
      fs::create_directories(dir);
      std::string index = "<html><head><title>Manual " + std::to_string(v) + "</title></head><body><ul>";
      for (int c = 1; c <= 3; ++c) {
        const std::string name = "chapter" + std::to_string(c) + ".html";
        index += "<li><a href=\"" + name + "\">Chapter " + std::to_string(c) + "</a></li>";
        std::string body = "<h1>Chapter " + std::to_string(c) + "</h1><p>" + Words(c, 400) + "</p><p>" +
                           (v == 1 ? std::string("This release is the first one.")
                                   : std::string("This release is the second one, with fixes.")) +
                           "</p><p><a href=\"index.html\">Contents</a> <img src=\"../logo.png\"></p>";
        std::ofstream(dir / name) << "<html><head><title>Chapter</title><script>var x = 1;</script></head><body>"
                                  << body << "</body></html>";
      }
      index += "<li><a href=\"missing.html\">Missing</a></li></ul></body></html>";
      std::ofstream(dir / "index.html") << index;
    }
    std::ofstream(dir_ / "site" / "manual" / "logo.png") << "\x89PNG not really";
    // No index.html in site/: the server lists the directory. "manual" without a slash is
    // answered with a 301 to "manual/".
    std::ofstream(dir_ / "site" / "start.html")
        << "<html><body><a href=\"manual\">Manual</a> <a href=\"manual/v1/index.html\">v1</a> "
           "<a href=\"manual/v2/index.html\">v2</a></body></html>";
  }

  // Starts the server on a free loopback port; returns it (0 if it did not come up).
  int Serve() {
    const std::string log = Path("server.log");
    const std::string cmd = "cd " + Path("site") + " && exec python3 -u -m http.server 0 --bind 127.0.0.1 > " + log +
                            " 2>&1 & echo $! > " + Path("server.pid");
    if (std::system(cmd.c_str()) != 0) return 0;
    server_pid_ = std::stoi(Read(Path("server.pid")));
    for (int i = 0; i < 100; ++i) {
      const std::string text = Read(log);
      const size_t at = text.find(" port ");
      if (at != std::string::npos) return std::atoi(text.c_str() + at + 6);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return 0;
  }

  pid_t server_pid_ = -1;
};

TEST_F(WarcTest, WgetCrawlOfALocalSiteFeedsRunAndBaseline) {
  if (!Have("wget")) GTEST_SKIP() << "wget is not installed (apt-get install wget): no crawl to read";
  if (!Have("python3")) GTEST_SKIP() << "python3 is not installed: no HTTP server to crawl";
  MakeSite();
  const int port = Serve();
  ASSERT_GT(port, 0) << Read(Path("server.log"));
  const std::string root = "http://127.0.0.1:" + std::to_string(port) + "/";
  const std::string wget = "cd " + dir_.string() + " && wget -q --recursive --level=6 --no-parent -e robots=off " +
                           "--no-directories --delete-after --warc-file=crawl " + root + "start.html >/dev/null 2>&1";
  const int rc = std::system(wget.c_str());
  // wget exits 8 when some fetch answered an error (the 404): expected.
  ASSERT_TRUE(WIFEXITED(rc) && (WEXITSTATUS(rc) == 0 || WEXITSTATUS(rc) == 8)) << rc;
  ASSERT_TRUE(fs::exists(Path("crawl.warc.gz")));

  fs::create_directories(Path("out"));
  const Outcome run = Neardup("run --input " + Path("crawl.warc.gz") + " --shards 2 --store " + Path("out/store") +
                              " --out " + Path("out/groups.jsonl"));
  ASSERT_EQ(run.code, 0) << run.err;
  const Outcome base = Neardup("baseline --input " + Path("crawl.warc.gz") + " --threshold 0.9 --groups " +
                               Path("out/base.jsonl") + " --pairs " + Path("out/pairs.jsonl"));
  ASSERT_EQ(base.code, 0) << base.err;
  // What the WARC held besides pages is counted: the picture (not HTML), wget's request, warcinfo,
  // metadata and resource records.
  EXPECT_THAT(base.out + base.err, HasSubstr("1 not HTML"));
  EXPECT_THAT(base.out + base.err, HasSubstr("0 bad records skipped"));

  const auto groups = Groups(Path("out/groups.jsonl"));
  auto group_of = [&](const std::string& path) {
    auto it = groups.find(root + path);
    EXPECT_NE(it, groups.end()) << path << " not in the run's groups";
    return it == groups.end() ? std::string("?") : it->second.group;
  };
  for (int c = 1; c <= 3; ++c) {
    const std::string name = "chapter" + std::to_string(c) + ".html";
    EXPECT_EQ(group_of("manual/v1/" + name), group_of("manual/v2/" + name)) << name;
  }
  EXPECT_NE(group_of("manual/v1/chapter1.html"), group_of("manual/v1/chapter2.html"));
  // The 301 from "manual" joins its target's group; the 404 is not a page.
  EXPECT_EQ(group_of("manual"), group_of("manual/"));
  EXPECT_EQ(groups.count(root + "manual/v1/missing.html"), 0u);
  EXPECT_EQ(groups.count(root + "manual/logo.png"), 0u);

  // Nine pairs: a chapter with its other version (3), and the four URLs of the two indexes
  // ("v1/", "v1/index.html", "v2/", "v2/index.html": the same text once the title is dropped, 6);
  // and the run agrees with the exact baseline.
  EXPECT_EQ(std::count(std::istreambuf_iterator<char>(*std::make_unique<std::ifstream>(Path("out/pairs.jsonl"))),
                       std::istreambuf_iterator<char>(), '\n'),
            9);
  const Outcome acc = Neardup("accuracy --groups " + Path("out/groups.jsonl") + " --baseline " + Path("out/base.jsonl"));
  ASSERT_EQ(acc.code, 0) << acc.err;
  EXPECT_THAT(acc.out, HasSubstr("\"rep\":0.000000,"));
  EXPECT_THAT(acc.out, HasSubstr("\"rer\":0.000000}"));
}

}  // namespace
}  // namespace neardup
