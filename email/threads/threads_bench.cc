#include "email/threads/threads_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>
#include <unordered_map>

#include "common/process_time.h"
#include "email/threads/mailbox_gen.h"
#include "email/threads/thread_weaver.h"

namespace neardup::email {
namespace {

// Union-find over thread keys; a Message-ID joins the threads it appears in unless it appears in
// more than `cap` of them.
std::unordered_map<std::string, std::vector<std::string>> OracleComponents(const std::vector<ThreadEmail>& emails,
                                                                           uint32_t cap) {
  std::unordered_map<std::string, size_t> id;
  std::vector<size_t> parent;
  auto node = [&](const std::string& k) {
    auto [it, fresh] = id.emplace(k, parent.size());
    if (fresh) parent.push_back(parent.size());
    return it->second;
  };
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::unordered_map<std::string, std::vector<size_t>> by_message;
  for (const ThreadEmail& e : emails) {
    const size_t t = node(ThreadKey(e.gid, e.thread));
    if (!e.message_id.empty()) by_message[e.message_id].push_back(t);
  }
  for (auto& [msg, threads] : by_message) {
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    if (threads.size() > cap) continue;
    for (size_t t : threads) parent[find(t)] = find(threads[0]);
  }
  std::unordered_map<size_t, std::vector<std::string>> groups;
  for (const auto& [k, n] : id) groups[find(n)].push_back(k);
  std::unordered_map<std::string, std::vector<std::string>> out;
  for (auto& [root, members] : groups) {
    std::sort(members.begin(), members.end());
    for (const std::string& k : members) out[k] = members;
  }
  return out;
}

}  // namespace

StatusOr<ThreadsBenchReport> RunThreadsBench(const ThreadsBenchOptions& o) {
  if (o.writers == 0 || o.readers == 0 || o.sync_every == 0) return InvalidArgument("bench email-threads: writers, readers and sync_every must be at least 1");
  MailGenOptions g;
  g.emails = o.emails;
  g.seed = o.seed;
  g.reused_message_id_share = o.reused_message_id_share;
  g.teams = 200;
  const std::vector<ThreadEmail> emails = GenerateMailboxes(g);
  std::error_code ec;
  std::filesystem::remove_all(o.dir, ec);
  ThreadsBenchReport r;
  {
    ThreadWeaverOptions wo;
    wo.path = o.dir;
    wo.spam_cap = o.spam_cap;
    ASSIGN_OR_RETURN(std::unique_ptr<ThreadWeaver> w, ThreadWeaver::Open(wo));
    std::vector<Status> errors(o.writers);
    const double c0 = ProcessCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (uint32_t k = 0; k < o.writers; ++k) {
      threads.emplace_back([&, k] {
        uint64_t since_sync = 0;
        for (size_t i = k; i < emails.size(); i += o.writers) {
          if (Status s = w->Add(emails[i]); !s.ok()) {
            errors[k] = s;
            return;
          }
          if (++since_sync == o.sync_every) {
            since_sync = 0;
            if (Status s = w->Sync(); !s.ok()) {
              errors[k] = s;
              return;
            }
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const Status& s : errors) RETURN_IF_ERROR(s);
    RETURN_IF_ERROR(w->Sync());
    r.write_seconds = SecondsSince(t0);
    r.write_cpu_seconds = ProcessCpuSeconds() - c0;
    r.emails = emails.size();
    r.merges = w->stats().merges;

    std::vector<std::pair<std::string, std::string>> keys;  // (gid, thread), each thread once
    {
      std::unordered_map<std::string, bool> seen;
      for (const ThreadEmail& e : emails) {
        if (seen.emplace(ThreadKey(e.gid, e.thread), true).second) keys.emplace_back(e.gid, e.thread);
      }
    }
    r.threads = keys.size();
    const auto oracle = OracleComponents(emails, o.spam_cap);
    // Every thread looked up once by `readers` threads (timed), then checked against the oracle.
    auto read_pass = [&](const ThreadWeaver& weaver, ReadPass* pass) -> Status {
      std::vector<UnifiedThread> answers(keys.size());
      std::vector<Status> read_errors(o.readers);
      const double c1 = ProcessCpuSeconds();
      const auto t1 = std::chrono::steady_clock::now();
      std::vector<std::thread> readers;
      for (uint32_t k = 0; k < o.readers; ++k) {
        readers.emplace_back([&, k] {
          for (size_t i = k; i < keys.size(); i += o.readers) {
            auto u = weaver.Lookup(keys[i].first, keys[i].second);
            if (!u.ok()) {
              read_errors[k] = u.status();
              return;
            }
            answers[i] = std::move(*u);
          }
        });
      }
      for (auto& t : readers) t.join();
      pass->seconds = SecondsSince(t1);
      pass->cpu_seconds = ProcessCpuSeconds() - c1;
      for (const Status& s : read_errors) RETURN_IF_ERROR(s);
      r.spam_lookups = 0;
      for (size_t i = 0; i < keys.size(); ++i) {
        const auto it = oracle.find(ThreadKey(keys[i].first, keys[i].second));
        r.spam_lookups += answers[i].spam > 0;
        if (!answers[i].known || it == oracle.end() || it->second != answers[i].threads) ++pass->mismatches;
      }
      return Status::Ok();
    };
    RETURN_IF_ERROR(read_pass(*w, &r.warm));
    r.disk_bytes = w->store().DiskBytes();
    // The same lookups on the store reopened: nothing in memory but what LevelDB reads.
    w.reset();
    ASSIGN_OR_RETURN(w, ThreadWeaver::Open(wo));
    RETURN_IF_ERROR(read_pass(*w, &r.cold));
    r.mismatches = r.warm.mismatches + r.cold.mismatches;
  }
  std::filesystem::remove_all(o.dir, ec);
  return r;
}

}  // namespace neardup::email
