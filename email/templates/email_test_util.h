// Test emails: templates that share one layout and one sender and differ in their text, filled
// with per-recipient fields, and personal one-off mail.
#pragma once

#include <string>
#include <vector>

#include "common/json_write.h"
#include "email/templates/email_reader.h"

namespace neardup::email::test {

inline const char* kNames[] = {"Ava", "Bob", "Chen", "Dana", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jin",
                               "Kai", "Lea", "Max", "Nia", "Oto", "Pia", "Quin", "Rui", "Sol", "Tess"};

// The shared layout: a header, a body of paragraphs, item rows and a footer.
inline std::string Layout(const std::vector<std::string>& paragraphs, int rows, const std::string& row_text) {
  std::string h = "<html><head><title>t</title><style>p{}</style></head><body><table><tr><td>Shop Inc</td></tr>";
  h += "<tr><td>";
  for (const auto& p : paragraphs) h += "<p>" + p + "</p>";
  h += "</td></tr><tr><td><table>";
  for (int r = 0; r < rows; ++r) h += "<tr><td>" + row_text + " " + std::to_string(r + 1) + "</td><td>$ " + std::to_string(10 + r) + ".99</td></tr>";
  h += "</table></td></tr><tr><td>Shop Inc, 1 Main St, Springfield. Unsubscribe from these emails.</td></tr></table></body></html>";
  return h;
}

// Email i of template `t` (0: password reset, 1: receipt, 2: newsletter) to recipient `user`.
inline EmailRecord TemplateEmail(int t, int i, int user, int64_t sent_ms) {
  EmailRecord r;
  r.id = "t" + std::to_string(t) + "-" + std::to_string(i);
  r.sender = "noreply@shop.example";
  r.recipient = "user" + std::to_string(user) + "@mail.example";
  const std::string name = kNames[user % 20];
  const std::string date = std::to_string(13 + user % 15) + "/0" + std::to_string(1 + i % 9) + "/2024";
  if (t == 0) {
    r.subject = "Reset your Shop password, " + name;
    r.html = Layout({"Hi " + name + ",", "We received a request to reset the password of your Shop account on " + date + ".",
                     "Use the button below to choose a new password. The link is valid for 24 hours only.",
                     "If you did not request a password reset, please ignore this email or contact support."},
                    0, "");
  } else if (t == 1) {
    r.subject = "Your Shop receipt #" + std::to_string(1000 + i);
    r.html = Layout({"Thanks for your purchase, " + name + ". This is the receipt for your order of " + date + ".",
                     "Order number SO-" + std::to_string(50000 + i * 7), "Your total amount has been paid with your card."},
                    1 + i % 4, "Item");
  } else {
    r.subject = "Weekly highlights from Shop";
    r.html = Layout({"Hello " + name + ", here are this week's highlights from the Shop newsletter.",
                     "Our summer collection arrived and the community picked its favourite reads of the week.",
                     "Read the full digest online and tell us what you would like to see next week."},
                    2, "Story");
  }
  r.sent_at_ms = sent_ms;
  return r;
}

// A personal email from a sender of its own.
inline EmailRecord PersonalEmail(int i, int64_t sent_ms) {
  static const char* kLines[] = {"Are we still on for Saturday?", "Can you send me the notes when you get a chance?",
                                 "The kids loved it! Thanks again.", "Running about ten minutes late, sorry.",
                                 "Did you get my message about the keys?"};
  EmailRecord r;
  r.id = "p-" + std::to_string(i);
  r.sender = "friend" + std::to_string(i) + "@home.example";
  r.recipient = "user" + std::to_string(i) + "@mail.example";
  r.subject = "Quick question";
  r.html = "<div>Hey " + std::string(kNames[i % 20]) + ",</div><div>" + kLines[i % 5] + " " + kLines[(i + 2) % 5] +
           "</div><div>Cheers</div>";
  r.sent_at_ms = sent_ms;
  return r;
}

// n emails of each template (recipients 0..n-1 each) interleaved, and `personal` personal ones,
// in time order one minute apart.
inline std::vector<EmailRecord> Stream(int n, int personal) {
  std::vector<EmailRecord> out;
  int64_t t = 1'717'372'800'000;  // 2024-06-03
  for (int i = 0; i < n; ++i) {
    for (int tpl = 0; tpl < 3; ++tpl) out.push_back(TemplateEmail(tpl, i, (i * 7 + tpl) % 1000, t += 60'000));
    if (i < personal) out.push_back(PersonalEmail(i, t += 60'000));
  }
  return out;
}

// An email as a JSON Lines line (without sent_at), as the reader and the HTTP API take it.
inline std::string JsonLine(const EmailRecord& r) {
  std::string s = "{\"id\":";
  AppendJsonString(&s, r.id);
  s += ",\"sender\":";
  AppendJsonString(&s, r.sender);
  s += ",\"recipient\":";
  AppendJsonString(&s, r.recipient);
  s += ",\"subject\":";
  AppendJsonString(&s, r.subject);
  s += ",\"html\":";
  AppendJsonString(&s, r.html);
  return s + "}\n";
}

}  // namespace neardup::email::test
