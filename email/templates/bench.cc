#include "email/templates/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include "email/templates/inducer.h"

namespace neardup::email {
namespace {

// Zipf(alpha) over 1..n by inverse CDF (a table of n doubles, binary search).
class Zipf {
 public:
  Zipf(uint64_t n, double alpha) : cdf_(n) {
    double sum = 0;
    for (uint64_t i = 0; i < n; ++i) cdf_[i] = (sum += std::pow(static_cast<double>(i + 1), -alpha));
    for (double& c : cdf_) c /= sum;
  }
  uint64_t operator()(std::mt19937_64& rng) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return static_cast<uint64_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  }

 private:
  std::vector<double> cdf_;
};

// A pool of random HTML to cut bodies from: paragraphs of words from a small vocabulary.
std::string HtmlPool(std::mt19937_64& rng, size_t bytes) {
  static const char* kWords[] = {"order", "your", "receipt", "shipping", "account", "thanks", "the", "team",
                                 "update", "price", "total", "item", "hello", "welcome", "new", "offer"};
  std::string s;
  s.reserve(bytes + 64);
  while (s.size() < bytes) {
    s += "<p>";
    for (int w = 0; w < 12; ++w) {
      s += kWords[rng() % 16];
      s += ' ';
    }
    s += "</p>";
  }
  return s;
}

}  // namespace

StatusOr<BenchResult> RunEmailBench(const BenchOptions& o) {
  if (o.templates == 0 || o.emails == 0) return InvalidArgument("bench email: emails and templates must be positive");
  if (!(o.alpha > 1.0)) return InvalidArgument("bench email: alpha must be greater than 1");
  std::mt19937_64 rng(o.seed);
  const Zipf zipf(o.templates, o.alpha);
  const std::string pool = HtmlPool(rng, 64 * 1024);
  std::normal_distribution<double> size(10 * 1024, 2 * 1024);

  // The stream, generated before the clock starts (the paper's clients are other machines).
  std::vector<PreparedEmail> stream;
  stream.reserve(o.emails);
  std::vector<uint64_t> per_template(o.templates, 0);
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < o.emails;) {
    const uint64_t t = zipf(rng);
    if (per_template[t] >= o.max_per_template) continue;  // T: the client sends no more of it
    ++per_template[t];
    PreparedEmail e;
    e.keys = {0x9E3779B97F4A7C15ull * (t + 1)};  // the embedded template id
    e.stored.set_id(std::to_string(i));
    e.stored.set_recipient(rng() % 10'000'000);
    const size_t n = static_cast<size_t>(std::clamp(size(rng), 256.0, 30.0 * 1024));
    const size_t at = rng() % (pool.size() - n);
    auto* b = e.stored.add_blocks();
    b->set_xpath("/html[0]/body[0]");
    b->set_text(pool.substr(at, n));
    bytes += n;
    stream.push_back(std::move(e));
    ++i;
  }

  std::filesystem::remove_all(o.dir);
  InducerOptions io;
  io.config = o.base;
  io.config.set_mode("paper");
  io.config.set_k(o.k);
  io.config.set_max_emails_per_row(o.max_emails_per_row);
  io.config.set_cluster_threads(o.cluster_threads);
  io.config.set_formation_threads(o.formation_threads);
  if (!o.aggregators) io.config.clear_udcas();  // the paper's workload measures clustering, not aggregators
  io.path = o.dir;
  io.sync = false;
  io.async_writes = o.async_writes;
  for (size_t i = 0; i < stream.size(); i += 97) io.sample_keys.push_back(stream[i].keys[0]);
  BenchResult r;
  {
    ASSIGN_OR_RETURN(auto inducer, Inducer::Open(io));
    const auto t0 = std::chrono::steady_clock::now();
    const size_t batch = std::max<size_t>(1, o.batch);
    for (size_t i = 0; i < stream.size(); i += batch) {
      const size_t end = std::min(stream.size(), i + batch);
      if (o.cluster_threads == 0) {
        RETURN_IF_ERROR(inducer->ProcessBatch(std::span<const PreparedEmail>(stream.data() + i, end - i)));
      } else {
        inducer->OfferBatch(std::vector<PreparedEmail>(std::make_move_iterator(stream.begin() + static_cast<ptrdiff_t>(i)),
                                                       std::make_move_iterator(stream.begin() + static_cast<ptrdiff_t>(end))),
                            /*wait=*/true);
      }
    }
    RETURN_IF_ERROR(inducer->Drain());
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const InducerStats s = inducer->stats();
    r.emails = s.emails;
    r.emails_per_second = static_cast<double>(s.emails) / std::max(r.seconds, 1e-9);
    r.templates_formed = s.new_templates;
    r.cache_hits = s.cache_hits;
    r.stored = s.stored;
    r.dropped = s.dropped_emails + s.dropped_formations;
    r.disk_bytes = inducer->store()->DiskBytes();
  }
  r.mean_email_bytes = static_cast<double>(bytes) / static_cast<double>(o.emails);
  std::filesystem::remove_all(o.dir);
  return r;
}

}  // namespace neardup::email
