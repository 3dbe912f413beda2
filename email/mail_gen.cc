#include "email/mail_gen.h"

#include <algorithm>
#include <map>
#include <queue>
#include <random>

namespace neardup::email {
namespace {

// prefix followed by the number (written with append: g++ 12 warns falsely on "literal" + string).
[[maybe_unused]] std::string N(std::string_view prefix, uint64_t i) { return std::string(prefix).append(std::to_string(i)); }

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

UserEventStream GenerateUserEvents(const UserEventGenOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> u01(0, 1);
  UserEventStream s;
  const std::vector<std::string> publics = {"gmail.com", "yahoo.com", "outlook.com"};
  auto team_name = [](uint32_t t) { return N("T", t); };
  for (uint32_t t = 0; t < o.teams; ++t) {
    TeamSettings ts{team_name(t), {}};
    ts.domains.push_back(N("t", t) + ".example");
    s.teams.push_back(ts);
    DomainRecord r;
    r.kind = DomainRecord::Kind::kTeam;
    r.team = ts;
    s.records.push_back(std::move(r));
  }
  // A team's domains: its tenant domain, a few of its own not in its settings (subsidiaries),
  // partners shared with other teams, and public providers.
  auto pick_email = [&](uint32_t t, const std::string& user, bool guest) {
    std::string domain;
    const double r = u01(rng);
    if (!guest && r < 0.7) {
      const uint32_t k = static_cast<uint32_t>(rng() % o.domains_per_team);
      domain = k == 0 ? N("t", t) + ".example" : N("t", t) + N("-", k) + ".example";
    } else if (r < 0.85) {
      domain = N("partner", rng() % 20) + ".example";
    } else {
      domain = publics[rng() % publics.size()];
    }
    return user + "@" + domain;
  };
  auto pick_role = [&](bool guest) -> std::string {
    if (guest) return "guest";
    const double r = u01(rng);
    return r < 0.02 ? "owner" : r < 0.08 ? "admin" : "member";
  };
  struct User {
    uint32_t team;
    std::string id, email, role;
    bool active;
    uint64_t version;
  };
  std::vector<User> users;
  std::vector<size_t> active;  // indices of active users
  // Deliveries waiting for their position (reordered and duplicated events).
  using Due = std::pair<uint64_t, uint64_t>;  // (position, sequence)
  std::priority_queue<std::pair<Due, size_t>, std::vector<std::pair<Due, size_t>>, std::greater<>> pending;
  std::vector<DomainEvent> events;
  uint64_t seq = 0;
  auto emit_due = [&](uint64_t pos) {
    while (!pending.empty() && pending.top().first.first <= pos) {
      DomainRecord r;
      r.kind = DomainRecord::Kind::kEvent;
      r.event = events[pending.top().second];
      pending.pop();
      s.records.push_back(std::move(r));
    }
  };
  for (uint64_t i = 0; i < o.changes; ++i) {
    DomainEvent e;
    e.id = N("e", i);
    const double r = u01(rng);
    size_t ui = 0;
    if (active.size() < 50 || r < 0.45) {  // a new user joins
      const uint32_t t = static_cast<uint32_t>(rng() % o.teams);
      const bool guest = u01(rng) < 0.15;
      users.push_back(User{t, N("U", users.size()), "", pick_role(guest), true, 0});
      User& u = users.back();
      u.email = pick_email(t, u.id, guest);
      ui = users.size() - 1;
      active.push_back(ui);
      e.type = DomainEventType::kJoined;
      e.team = team_name(t);
      e.user = u.id;
      e.email = u.email;
      e.role = u.role;
    } else {
      const size_t slot = rng() % active.size();
      ui = active[slot];
      User& u = users[ui];
      e.team = team_name(u.team);
      e.user = u.id;
      e.email = u.email;
      e.role = u.role;
      if (r < 0.65) {
        e.type = DomainEventType::kLeft;
        u.active = false;
        active[slot] = active.back();
        active.pop_back();
      } else if (r < 0.85) {
        e.type = DomainEventType::kEmailChanged;
        u.email = pick_email(u.team, u.id, u.role == "guest");
        e.new_email = u.email;
      } else {
        e.type = DomainEventType::kRoleChanged;
        const bool guest = u.role != "guest" && u01(rng) < 0.2;
        std::string role = pick_role(guest);
        if (role == u.role) role = u.role == "member" ? "admin" : "member";
        u.role = role;
        e.new_role = u.role;
      }
    }
    // The users table's write, then the event into the at-least-once queue.
    User& u = users[ui];
    ++u.version;
    DomainRecord row;
    row.kind = DomainRecord::Kind::kUser;
    row.user = UserRow{e.team, u.id, u.email, u.role, u.active, u.version};
    s.records.push_back(std::move(row));
    events.push_back(e);
    ++s.events;
    const size_t idx = events.size() - 1;
    if (u01(rng) < o.drop_rate) {
      ++s.dropped;
    } else {
      uint64_t at = i;
      if (u01(rng) < o.reorder_rate) {
        at += 1 + rng() % o.reorder_window;
        ++s.reordered;
      }
      pending.push({{at, seq++}, idx});
      if (u01(rng) < o.duplicate_rate) {
        pending.push({{i + rng() % (o.reorder_window + 1), seq++}, idx});
        ++s.duplicated;
      }
    }
    emit_due(i);
  }
  emit_due(UINT64_MAX);
  std::map<DomainKey, int64_t> truth;
  for (const User& u : users) {
    if (u.active) ++truth[DomainKey{team_name(u.team), DomainOf(u.email), u.role}];
  }
  s.truth.assign(truth.begin(), truth.end());
  return s;
}

}  // namespace neardup::email
