#include "email/domains/user_event_gen.h"

#include <functional>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <string_view>

namespace neardup::email {
namespace {

// prefix followed by the number (written with append: g++ 12 warns falsely on "literal" + string).
std::string Numbered(std::string_view prefix, uint64_t i) { return std::string(prefix).append(std::to_string(i)); }

std::string TeamName(uint32_t t) { return Numbered("T", t); }

// One run of the generator: the users table as it changes, and the queue of event deliveries
// waiting for their position. Every draw from the random generator is made in a fixed order, so a
// seed gives one stream.
class UserEventGenerator {
 public:
  explicit UserEventGenerator(const UserEventGenOptions& o) : o_(o), rng_(o.seed) {}

  UserEventStream Run() {
    AddTeams();
    for (uint64_t i = 0; i < o_.changes; ++i) {
      DomainEvent e;
      e.id = Numbered("e", i);
      const size_t ui = Change(&e);
      Record(std::move(e), ui, i);
      EmitDue(i);
    }
    EmitDue(UINT64_MAX);
    std::map<DomainKey, int64_t> truth;
    for (const User& u : users_) {
      if (u.active) ++truth[DomainKey{TeamName(u.team), DomainOf(u.email), u.role}];
    }
    s_.truth.assign(truth.begin(), truth.end());
    return std::move(s_);
  }

 private:
  struct User {
    uint32_t team;
    std::string id, email, role;
    bool active;
    uint64_t version;
  };
  using Due = std::pair<uint64_t, uint64_t>;  // (position, sequence)

  void AddTeams() {
    for (uint32_t t = 0; t < o_.teams; ++t) {
      TeamSettings ts{TeamName(t), {}};
      ts.domains.push_back(Numbered("t", t) + ".example");
      s_.teams.push_back(ts);
      DomainRecord r;
      r.kind = DomainRecord::Kind::kTeam;
      r.team = ts;
      s_.records.push_back(std::move(r));
    }
  }

  // A team's domains: its tenant domain, a few of its own not in its settings (subsidiaries),
  // partners shared with other teams, and public providers.
  std::string PickEmail(uint32_t t, const std::string& user, bool guest) {
    static const std::vector<std::string> publics = {"gmail.com", "yahoo.com", "outlook.com"};
    std::string domain;
    const double r = u01_(rng_);
    if (!guest && r < 0.7) {
      const uint32_t k = static_cast<uint32_t>(rng_() % o_.domains_per_team);
      domain = k == 0 ? Numbered("t", t) + ".example" : Numbered("t", t) + Numbered("-", k) + ".example";
    } else if (r < 0.85) {
      domain = Numbered("partner", rng_() % 20) + ".example";
    } else {
      domain = publics[rng_() % publics.size()];
    }
    return user + "@" + domain;
  }

  std::string PickRole(bool guest) {
    if (guest) return "guest";
    const double r = u01_(rng_);
    return r < 0.02 ? "owner" : r < 0.08 ? "admin" : "member";
  }

  // One change of the users table, described in *e; returns the changed user's index.
  size_t Change(DomainEvent* e) {
    const double r = u01_(rng_);
    if (active_.size() < 50 || r < 0.45) return Join(e);
    const size_t slot = rng_() % active_.size();
    const size_t ui = active_[slot];
    User& u = users_[ui];
    e->team = TeamName(u.team);
    e->user = u.id;
    e->email = u.email;
    e->role = u.role;
    if (r < 0.65) {
      e->type = DomainEventType::kLeft;
      u.active = false;
      active_[slot] = active_.back();
      active_.pop_back();
    } else if (r < 0.85) {
      e->type = DomainEventType::kEmailChanged;
      u.email = PickEmail(u.team, u.id, u.role == "guest");
      e->new_email = u.email;
    } else {
      e->type = DomainEventType::kRoleChanged;
      const bool guest = u.role != "guest" && u01_(rng_) < 0.2;
      std::string role = PickRole(guest);
      if (role == u.role) role = u.role == "member" ? "admin" : "member";
      u.role = role;
      e->new_role = u.role;
    }
    return ui;
  }

  // A new user joins a random team.
  size_t Join(DomainEvent* e) {
    const uint32_t t = static_cast<uint32_t>(rng_() % o_.teams);
    const bool guest = u01_(rng_) < 0.15;
    users_.push_back(User{t, Numbered("U", users_.size()), "", PickRole(guest), true, 0});
    User& u = users_.back();
    u.email = PickEmail(t, u.id, guest);
    const size_t ui = users_.size() - 1;
    active_.push_back(ui);
    e->type = DomainEventType::kJoined;
    e->team = TeamName(t);
    e->user = u.id;
    e->email = u.email;
    e->role = u.role;
    return ui;
  }

  // The users table's write of change i, then its event into the at-least-once queue: dropped,
  // late, or delivered twice at the configured rates.
  void Record(DomainEvent e, size_t ui, uint64_t i) {
    User& u = users_[ui];
    ++u.version;
    DomainRecord row;
    row.kind = DomainRecord::Kind::kUser;
    row.user = UserRow{e.team, u.id, u.email, u.role, u.active, u.version};
    s_.records.push_back(std::move(row));
    events_.push_back(std::move(e));
    ++s_.events;
    const size_t idx = events_.size() - 1;
    if (u01_(rng_) < o_.drop_rate) {
      ++s_.dropped;
      return;
    }
    uint64_t at = i;
    if (u01_(rng_) < o_.reorder_rate) {
      at += 1 + rng_() % o_.reorder_window;
      ++s_.reordered;
    }
    pending_.push({{at, seq_++}, idx});
    if (u01_(rng_) < o_.duplicate_rate) {
      pending_.push({{i + rng_() % (o_.reorder_window + 1), seq_++}, idx});
      ++s_.duplicated;
    }
  }

  // The deliveries due at or before position pos, in order.
  void EmitDue(uint64_t pos) {
    while (!pending_.empty() && pending_.top().first.first <= pos) {
      DomainRecord r;
      r.kind = DomainRecord::Kind::kEvent;
      r.event = events_[pending_.top().second];
      pending_.pop();
      s_.records.push_back(std::move(r));
    }
  }

  const UserEventGenOptions& o_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> u01_{0, 1};
  UserEventStream s_;
  std::vector<User> users_;
  std::vector<size_t> active_;  // indices of active users
  // Deliveries waiting for their position (reordered and duplicated events).
  std::priority_queue<std::pair<Due, size_t>, std::vector<std::pair<Due, size_t>>, std::greater<>> pending_;
  std::vector<DomainEvent> events_;
  uint64_t seq_ = 0;
};

}  // namespace

UserEventStream GenerateUserEvents(const UserEventGenOptions& options) { return UserEventGenerator(options).Run(); }

}  // namespace neardup::email
