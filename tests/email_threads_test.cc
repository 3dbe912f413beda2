// End-to-end test of the unified threads and domain counts subcommands: generated mailboxes through
// `neardup email threads ingest` and `show` against a union-find oracle computed here from the same
// file, and a generated user-event stream (duplicates, drops, late events) through `email domains
// ingest --heal-all`, `counts` against the generator's exact counts, and `classify`; bad lines
// are reported with their numbers and skipped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "tests/binary_test.h"

namespace neardup {
namespace {

using ::testing::HasSubstr;

class EmailThreadsCommandsTest : public BinaryTest {
 protected:
  // Inserts `bad` so that it becomes line `at` (1-based) of the file.
  void InsertLine(const std::string& name, size_t at, const std::string& bad) {
    std::istringstream in(Read(Path(name)));
    std::string line, out;
    size_t n = 0;
    while (std::getline(in, line)) {
      if (++n == at) out += bad + "\n";
      out += line + "\n";
    }
    Write(name, out);
  }
};

TEST_F(EmailThreadsCommandsTest, IngestAndShowMatchTheComponents) {
  const Outcome gen = Neardup("email gen-threads --emails 4000 --seed 3 --out " + Path("messages.jsonl"));
  ASSERT_EQ(gen.code, 0) << gen.err;
  InsertLine("messages.jsonl", 3, R"({"thread":"t","message_id":"<x>"})");
  InsertLine("messages.jsonl", 8, "not json");
  const Outcome ingest = Neardup("email threads ingest --input " + Path("messages.jsonl") + " --store " + Path("store") +
                                 " --sync-every 500");
  ASSERT_EQ(ingest.code, 0) << ingest.err;
  EXPECT_THAT(ingest.err, HasSubstr("messages.jsonl:3: skipped: missing required field 'gid'"));
  EXPECT_THAT(ingest.err, HasSubstr("messages.jsonl:8: skipped: not JSON"));
  EXPECT_THAT(ingest.out, HasSubstr("2 bad lines skipped"));

  // The oracle: union-find over the file's good lines.
  std::map<std::string, std::string> parent;
  std::function<std::string(const std::string&)> find = [&](const std::string& x) {
    auto it = parent.find(x);
    if (it == parent.end()) return parent[x] = x;
    if (it->second == x) return x;
    return it->second = find(it->second);
  };
  std::vector<std::pair<std::string, std::string>> threads;
  std::set<std::string> seen;
  simdjson::dom::parser p;
  std::istringstream in(Read(Path("messages.jsonl")));
  std::string line;
  while (std::getline(in, line)) {
    simdjson::dom::element e;
    if (p.parse(line).get(e) != simdjson::SUCCESS) continue;
    std::string_view gid, thread, msg;
    if (e["gid"].get_string().get(gid) != simdjson::SUCCESS) continue;
    if (e["thread"].get_string().get(thread) != simdjson::SUCCESS) continue;
    const std::string key = std::string(gid) + ":" + std::string(thread);
    find(key);
    if (seen.insert(key).second) threads.emplace_back(gid, thread);
    if (e["message_id"].get_string().get(msg) == simdjson::SUCCESS) parent[find(key)] = find("M" + std::string(msg));
  }
  std::map<std::string, std::vector<std::string>> comps;
  for (const std::string& k : seen) comps[find(k)].push_back(k);
  // A thread of a large component (replies, forwards) and a sample of others.
  size_t checked = 0, biggest = 0;
  for (size_t i = 0; i < threads.size(); i += threads.size() / 12) {
    const auto& [gid, thread] = threads[i];
    const Outcome show = Neardup("email threads show --store " + Path("store") + " --gid " + gid + " --thread " + thread);
    ASSERT_EQ(show.code, 0) << show.err;
    simdjson::dom::element e = p.parse(show.out);
    std::vector<std::string> got;
    for (simdjson::dom::element t : e["threads"].get_array()) got.emplace_back(std::string_view(t));
    const auto& want = comps[find(gid + ":" + thread)];
    EXPECT_EQ(got, want) << gid << ":" << thread;
    biggest = std::max(biggest, want.size());
    ++checked;
  }
  EXPECT_GE(checked, 10u);
  EXPECT_GT(biggest, 2u);
  // Filtered to a team's mailboxes: a subset, each of them of the team.
  const auto& [gid, thread] = threads[0];
  const Outcome team = Neardup("email threads show --store " + Path("store") + " --gid " + gid + " --thread " + thread +
                               " --team-gids " + gid);
  ASSERT_EQ(team.code, 0) << team.err;
  simdjson::dom::element e = p.parse(team.out);
  for (simdjson::dom::element t : e["threads"].get_array()) EXPECT_EQ(std::string_view(t).substr(0, gid.size() + 1), gid + ":");
  const Outcome unknown = Neardup("email threads show --store " + Path("store") + " --gid nobody --thread x");
  ASSERT_EQ(unknown.code, 0) << unknown.err;
  EXPECT_THAT(unknown.out, HasSubstr("\"known\":false"));
}

TEST_F(EmailThreadsCommandsTest, DomainsIngestHealsToTheExactCountsAndClassifies) {
  const Outcome gen = Neardup("email gen-domains --changes 6000 --seed 5 --out " + Path("events.jsonl") + " --truth " +
                              Path("truth.jsonl"));
  ASSERT_EQ(gen.code, 0) << gen.err;
  EXPECT_THAT(gen.err, HasSubstr("duplicated"));
  InsertLine("events.jsonl", 200, R"({"kind":"event","id":"x","type":"renamed","team":"T1","user":"u","email":"a@b.c","role":"member"})");
  const Outcome ingest = Neardup("email domains ingest --input " + Path("events.jsonl") + " --store " + Path("store") + " --heal-all");
  ASSERT_EQ(ingest.code, 0) << ingest.err;
  EXPECT_THAT(ingest.err, HasSubstr("events.jsonl:200: skipped: field 'type' is not joined"));
  EXPECT_THAT(ingest.out, HasSubstr("healed"));
  // Every count equals the generator's truth (keys it does not list count 0).
  std::map<std::string, int64_t> truth;
  simdjson::dom::parser p;
  auto key = [](simdjson::dom::element e) {
    return std::string(std::string_view(e["team"])) + "|" + std::string(std::string_view(e["domain"])) + "|" +
           std::string(std::string_view(e["role"]));
  };
  std::istringstream t(Read(Path("truth.jsonl")));
  std::string line;
  while (std::getline(t, line)) {
    simdjson::dom::element e = p.parse(line);
    truth[key(e)] = int64_t(e["count"]);
  }
  ASSERT_GT(truth.size(), 20u);
  const Outcome counts = Neardup("email domains counts --store " + Path("store"));
  ASSERT_EQ(counts.code, 0) << counts.err;
  std::istringstream c(counts.out);
  size_t listed = 0, wrong = 0;
  while (std::getline(c, line)) {
    simdjson::dom::element e = p.parse(line);
    const auto it = truth.find(key(e));
    wrong += int64_t(e["count"]) != (it == truth.end() ? 0 : it->second);
    listed += it != truth.end();
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(listed, truth.size());

  const Outcome own = Neardup("email domains classify --store " + Path("store") +
                              " --team T1 --inviter boss@t1.example --invitee new@t1.example");
  ASSERT_EQ(own.code, 0) << own.err;
  EXPECT_THAT(own.out, HasSubstr("\"class\":\"internal\""));
  EXPECT_THAT(own.out, HasSubstr("team's own"));
  const Outcome sub = Neardup("email domains classify --store " + Path("store") +
                              " --team T1 --inviter boss@t1.example --invitee new@t1-1.example");
  ASSERT_EQ(sub.code, 0) << sub.err;
  EXPECT_THAT(sub.out, HasSubstr("\"class\":\"internal\""));  // the team's other domain, by its counts
  const Outcome stranger = Neardup("email domains classify --store " + Path("store") +
                                   " --team T1 --inviter boss@t1.example --invitee x@nowhere.example");
  ASSERT_EQ(stranger.code, 0) << stranger.err;
  EXPECT_THAT(stranger.out, HasSubstr("\"class\":\"external\""));
  const Outcome bad = Neardup("email domains classify --store " + Path("store") +
                              " --team T1 --inviter boss@t1.example --invitee not-an-address");
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("invitee is not an email address"));
}

}  // namespace
}  // namespace neardup
