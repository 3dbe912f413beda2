// User-defined cluster aggregators (UDCAs): the Crusher paper's Section 2.1 plug-ins. Each sees all
// the emails of a cluster that passed k-anonymity and returns one template annotation; at
// annotation time it may use that annotation on a single email of the template.
//
// Aggregators are registered by name and chosen by name in configuration (email.udcas). Four are
// built in:
//   fixed_text        text blocks common to every email of the cluster (same XPath, same text)
//   date_format       D/M or M/D, inferred from the cluster's unambiguous numeric dates; resolves
//                     an email's ambiguous ones ("1/2/2019" -> "2019-02-01" under D/M)
//   vertical          the majority label of a keyword classifier over the cluster's emails
//                     (receipt, shipping, bill, hotel, password_reset, newsletter), kept when its
//                     share reaches email.vertical_threshold
//   field_extraction  per field (date, price, order_number, email_address), the XPath with the
//                     highest average field score across the cluster: the extraction rule
//
// A new aggregator: derive from Udca and register a factory before the module starts:
//   UdcaRegistry::Global().Register("language", [](const pb::EmailConfig&) -> StatusOr<std::unique_ptr<Udca>> {
//     return std::unique_ptr<Udca>(new LanguageUdca);
//   });
//
// Annotations are JSON text (templates.jsonl embeds them as they are). Aggregators see only
// emails of a cluster with k unique recipients, and what they aggregate is written into a template
// that is never exported under k.
//
// Thread safety: a Udca is immutable after creation; Aggregate and Apply may run concurrently.
// The registry is thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "proto/config.pb.h"
#include "proto/email.pb.h"

namespace neardup::email {

class Udca {
 public:
  virtual ~Udca() = default;
  virtual std::string_view name() const = 0;
  // The template annotation of a cluster (its emails, at least one), as JSON text; empty for
  // none.
  virtual std::string Aggregate(std::span<const pb::StoredEmail* const> emails) const = 0;
  // What the template's annotation (this aggregator's Aggregate output) says about one email of
  // the template, as JSON text; empty for nothing. By default nothing.
  virtual std::string Apply(std::string_view annotation, const pb::StoredEmail& email) const;
  // Whether Aggregate reads the emails' text blocks. A cluster row keeps an email's blocks only
  // when one of the configured aggregators does (the text is most of an email's bytes); without
  // them it keeps the recipient hash, subject, times, keys and shingles. By default true.
  virtual bool ReadsText() const { return true; }
};

using UdcaFactory = std::function<StatusOr<std::unique_ptr<Udca>>(const pb::EmailConfig&)>;

class UdcaRegistry {
 public:
  // The process's registry, with the four built-ins registered.
  static UdcaRegistry& Global();

  // FailedPrecondition when the name is taken; InvalidArgument for an empty name.
  Status Register(const std::string& name, UdcaFactory factory);
  // The aggregators config.udcas names, in order. NotFound naming the unknown name and the
  // registered ones; a factory's own error.
  StatusOr<std::vector<std::unique_ptr<Udca>>> Create(const pb::EmailConfig& config) const;
  std::vector<std::string> Names() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, UdcaFactory> factories_;
};

// The classifier behind `vertical`: the label whose keywords an email's subject and text hit
// most (at least two hits), or empty. Exposed for tests.
std::string ClassifyVertical(const pb::StoredEmail& email);

// Numeric dates in text: day-month or month-day with a year ("1/2/2019", "03.06.24", "6/18/24").
struct NumericDate {
  int a, b, year;  // the first two numbers as written, the year (two digits become 20xx)
};
std::vector<NumericDate> FindNumericDates(std::string_view text);

}  // namespace neardup::email
