#include "gencrawl/page_model.h"

#include <algorithm>
#include <cmath>

namespace neardup::gencrawl {
namespace {

// Substitutes words of `w` so that `shingles` of its k-shingles change.
void ApplyEdit(const Vocabulary& vocab, int shingle_k, std::vector<uint32_t>* w, uint64_t seed, uint32_t shingles) {
  const uint32_t n = static_cast<uint32_t>(w->size());
  const uint32_t k = static_cast<uint32_t>(shingle_k);
  if (n == 0 || shingles == 0) return;
  Rng r(seed);
  auto substitute = [&](uint32_t pos) {
    const uint32_t old = (*w)[pos];
    uint32_t nw = vocab.Sample(r);
    while (nw == old) nw = vocab.Sample(r);
    (*w)[pos] = nw;
  };
  // A word at position p < k-1 lies in p+1 shingles: one substitution there changes the
  // remainder; the others (k shingles each) are spaced >= k apart so their shingles are disjoint.
  const uint32_t rem = shingles % k;
  uint32_t full = shingles / k;
  uint32_t start = k - 1;
  if (rem > 0 && rem - 1 < n) {
    substitute(rem - 1);
    start = rem - 1 + k;
  }
  if (full == 0 || start >= n) return;
  full = std::min(full, (n - 1 - start) / k + 1);
  const uint32_t slack = (n - 1 - start) - (full - 1) * k;
  std::vector<uint32_t> offs(full);
  for (auto& x : offs) x = static_cast<uint32_t>(r.Below(slack + 1));
  std::sort(offs.begin(), offs.end());
  for (uint32_t j = 0; j < full; ++j) substitute(start + offs[j] + j * k);
}

}  // namespace

LengthModel::LengthModel(uint32_t epoch, double drift) {
  log_median = DetLog(300.0);
  for (size_t i = 0; i < std::size(kSpikes); ++i) spike_weight[i] = kSpikes[i].weight;
  if (epoch == 0 || drift == 0.0) return;
  drifted = true;
  const double t = drift * static_cast<double>(epoch);
  log_median += t / 2;
  double spikes = 0;
  for (size_t i = 0; i < std::size(kSpikes); ++i) {
    spike_weight[i] = 0.45 * kSpikes[i].weight * DetExp(t * kSpikeTrend[i]);
    spikes += spike_weight[i];
  }
  body_share = 0.55 / (0.55 + spikes);
  for (double& w : spike_weight) w /= spikes;  // within the spikes' share, as kSpikes
}

uint32_t SampleLength(Rng& r, const LengthModel& m) {
  static const double kLogMedian = DetLog(300.0);
  const double log_median = m.drifted ? m.log_median : kLogMedian;
  if (r.Uniform() < m.body_share) {
    for (;;) {
      const double x = DetExp(log_median + 0.75 * r.Normal());
      if (x >= 20.0 && x < 1700.5) return static_cast<uint32_t>(x + 0.5);
    }
  }
  double u = r.Uniform();
  const Spike* s = &kSpikes[0];
  for (size_t i = 0; i < std::size(kSpikes); ++i) {
    s = &kSpikes[i];
    if (u < m.spike_weight[i]) break;
    u -= m.spike_weight[i];
  }
  const uint32_t jitter = s->words / 80 + 1;
  const uint32_t len = s->words - jitter + static_cast<uint32_t>(r.Below(2 * jitter + 1));
  return std::clamp<uint32_t>(len, 20, 1700);
}

double SamplePopularity(Rng& r, double scale) {
  if (r.Chance(0.15)) return 0.0;
  const double u = 1.0 - r.Uniform();  // (0, 1]
  double x = (DetExp(-DetLog(u) / 1.16) - 1.0) * scale;
  if (x > 1e7) x = 1e7;
  return std::floor(x * 1000.0 + 0.5) / 1000.0;
}

Content MakeContent(Rng& r, const LengthModel& lengths, const std::vector<Host>& hosts, uint32_t host) {
  Content c;
  c.article_seed = r.Next();
  const uint32_t len = SampleLength(r, lengths);
  const Host& h = hosts[host];
  if (len >= 4 * h.bp_len) {
    c.bp_host = static_cast<int32_t>(host);
    c.article_len = len - h.bp_len;
  } else {
    c.article_len = len;
  }
  return c;
}

uint32_t EditShinglesFor(uint32_t words, double target, bool below) {
  const double x = static_cast<double>(words) * (1.0 - target) / (1.0 + target);
  double c = below ? std::ceil(x) : std::floor(x);
  if (c < 1) c = 1;
  if (c > words) c = words;
  return static_cast<uint32_t>(c);
}

void BuildWords(const Vocabulary& vocab, const std::vector<Host>& hosts, int shingle_k, const Content& c,
                PageWords* pw) {
  pw->ids.clear();
  pw->header_len = pw->footer_len = 0;
  uint32_t footer[128];
  if (c.bp_host >= 0) {
    const Host& h = hosts[static_cast<size_t>(c.bp_host)];
    Rng br(Mix(h.seed, kSaltBoilerplate));
    for (uint32_t i = 0; i < h.bp_header; ++i) pw->ids.push_back(vocab.Sample(br));
    pw->footer_len = h.bp_len - h.bp_header;
    for (uint32_t i = 0; i < pw->footer_len; ++i) footer[i] = vocab.Sample(br);
    pw->header_len = h.bp_header;
  }
  Rng ar(c.article_seed);
  for (uint32_t i = 0; i < c.article_len; ++i) pw->ids.push_back(vocab.Sample(ar));
  pw->ids.insert(pw->ids.end(), footer, footer + pw->footer_len);
  for (int l = 0; l < 2; ++l) {
    if (c.edit_shingles[l] > 0) ApplyEdit(vocab, shingle_k, &pw->ids, c.edit_seed[l], c.edit_shingles[l]);
  }
}

}  // namespace neardup::gencrawl
