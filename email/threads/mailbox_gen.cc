#include "email/threads/mailbox_gen.h"

#include <algorithm>
#include <map>
#include <random>

namespace neardup::email {
namespace {

// prefix followed by the number (written with append: g++ 12 warns falsely on "literal" + string).
std::string N(std::string_view prefix, uint64_t i) { return std::string(prefix).append(std::to_string(i)); }

std::string Hex(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s(12, '0');
  for (int i = 11; i >= 0; --i, v >>= 4) s[i] = d[v & 15];
  return s;
}

struct Conversation {
  std::vector<std::string> participants;  // gids
  uint32_t remaining = 0;
};

}  // namespace

std::vector<ThreadEmail> GenerateMailboxes(const MailGenOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> u01(0, 1);
  auto gid = [&](uint32_t team, uint32_t user) { return N("u", team) + N("-", user); };
  auto team_of = [](const std::string& g) { return std::string("team").append(g.substr(1, g.find('-') - 1)); };
  auto random_user = [&](uint32_t team) { return gid(team, static_cast<uint32_t>(rng() % o.users_per_team)); };
  std::vector<ThreadEmail> out;
  out.reserve(o.emails + 64);
  // (conversation, gid) -> the mailbox's current thread and how many messages it holds.
  std::map<std::pair<uint64_t, std::string>, std::pair<std::string, uint32_t>> threads;
  auto deliver = [&](uint64_t conv, const std::string& g, const std::string& msg) {
    auto& [thread, count] = threads[{conv, g}];
    if (thread.empty() || count >= o.thread_split) {
      thread = std::string("th").append(Hex(rng()));
      count = 0;
    }
    ++count;
    out.push_back(ThreadEmail{g, thread, msg, team_of(g)});
  };
  std::vector<std::pair<uint64_t, Conversation>> active;
  uint64_t next_conv = 0, next_msg = 0;
  const std::string reused = "<noreply@notifications.example>";
  while (out.size() < o.emails || !active.empty()) {
    // Keep about 64 conversations going at once, interleaved.
    while (out.size() < o.emails && active.size() < 64) {
      Conversation c;
      const uint32_t team = static_cast<uint32_t>(rng() % o.teams);
      c.participants.push_back(random_user(team));
      const uint32_t recipients = 1 + static_cast<uint32_t>(rng() % 4);
      for (uint32_t i = 0; i < recipients; ++i) {
        const uint32_t t = u01(rng) < o.cross_team_share ? static_cast<uint32_t>(rng() % o.teams) : team;
        const std::string g = random_user(t);
        if (std::find(c.participants.begin(), c.participants.end(), g) == c.participants.end()) c.participants.push_back(g);
      }
      c.remaining = 1;
      while (u01(rng) < o.reply_share && c.remaining < 400) ++c.remaining;
      active.emplace_back(next_conv++, std::move(c));
    }
    if (active.empty()) break;
    const size_t pick = rng() % active.size();
    auto& [conv, c] = active[pick];
    const double r = u01(rng);
    if (r < o.reused_message_id_share) {
      // The system that gives every email it sends the same Message-ID, each in a new thread.
      const std::string g = c.participants[rng() % c.participants.size()];
      out.push_back(ThreadEmail{g, std::string("th").append(Hex(rng())), reused, team_of(g)});
      continue;
    }
    std::string msg = std::string("<").append(Hex(next_msg++)) + std::string(".").append(Hex(rng())) + "@mail.example>";
    if (u01(rng) < o.missing_message_id_share) msg.clear();
    if (c.participants.size() > 1 && u01(rng) < o.forward_share) {
      // A forward: the forwarder's copy stays in their thread, the new participant gets a thread
      // of their own, and is part of the conversation from now on.
      const std::string from = c.participants[rng() % c.participants.size()];
      const std::string to = random_user(static_cast<uint32_t>(rng() % o.teams));
      deliver(conv, from, msg);
      if (std::find(c.participants.begin(), c.participants.end(), to) == c.participants.end()) {
        c.participants.push_back(to);
        deliver(conv, to, msg);
      }
    } else {
      for (const std::string& g : c.participants) deliver(conv, g, msg);
    }
    if (--c.remaining == 0) {
      active[pick] = std::move(active.back());
      active.pop_back();
    }
  }
  return out;
}

}  // namespace neardup::email
