// The page model: what a content page is, as a small descriptor (Content) from which its word
// sequence is regenerated when it is written. Page lengths (a log-normal body plus spikes, drifting
// with the crawl epoch), popularity, the site boilerplate around an article, and the word
// substitutions ("edit layers") that make near-copies and recrawl edits hit a target Jaccard.
// The planner (crawl_plan.h and its steps) makes Contents; the crawl writer regenerates their
// words (BuildWords) for the renderer.
//
// Thread safety: LengthModel is immutable; the functions are pure given their Rng.
#pragma once

#include <cstdint>
#include <iterator>
#include <vector>

#include "gencrawl/random.h"
#include "gencrawl/sites.h"
#include "gencrawl/vocabulary.h"

namespace neardup::gencrawl {

// Page lengths: 55% log-normal (median 300 words), 45% spikes with small jitter, in [20, 1700].
struct Spike {
  uint32_t words;
  double weight;
};
inline constexpr Spike kSpikes[] = {{237, 0.36}, {142, 0.14}, {64, 0.12}, {415, 0.14}, {760, 0.13}, {1190, 0.11}};

// The length mixture of one crawl epoch. Epoch 0 (or no drift) is the mixture above. Epoch e
// with drift d: component c's weight is multiplied by exp(d * e * kSpikeTrend[c]) and the weights
// renormalized (templated sites grow or shrink: alternate spikes gain and lose pages), and the
// body's median is multiplied by exp(d * e / 2) (free-form pages slowly get longer). The spikes
// stay where they are (a template's length does not change).
inline constexpr double kSpikeTrend[] = {1.0, -1.0, 1.0, -1.0, 1.0, -1.0};
struct LengthModel {
  bool drifted = false;
  double body_share = 0.55;
  double log_median = 0;
  double spike_weight[std::size(kSpikes)] = {};

  LengthModel(uint32_t epoch, double drift);
};

// A page length in words, in [20, 1700].
uint32_t SampleLength(Rng& r, const LengthModel& m);

// Pareto(alpha = 1.16) minus one, scaled; 15% zeros; rounded to 1/1000.
double SamplePopularity(Rng& r, double scale);

// How to regenerate a page's word sequence.
struct Content {
  uint64_t article_seed = 0;
  uint64_t edit_seed[2] = {0, 0};
  uint32_t article_len = 0;
  uint32_t edit_shingles[2] = {0, 0};  // shingles to change per edit layer; 0 = no layer
  int32_t bp_host = -1;                // whose boilerplate surrounds the article; -1 none
};

// A new page on `hosts[host]`: a fresh article of a sampled length, inside the host's
// boilerplate unless the page is shorter than four times the boilerplate.
Content MakeContent(Rng& r, const LengthModel& lengths, const std::vector<Host>& hosts, uint32_t host);

// The page's words: article plus boilerplate.
inline uint32_t WordCount(const Content& c, const std::vector<Host>& hosts) {
  return c.article_len + (c.bp_host >= 0 ? hosts[static_cast<size_t>(c.bp_host)].bp_len : 0);
}

// Shingles to change per side so that (n - c) / (n + c) lands on the target's side of it: the
// edit_shingles of a layer meant to put a `words`-word page just below or above Jaccard `target`.
uint32_t EditShinglesFor(uint32_t words, double target, bool below);

// A page's words plus where the boilerplate ends.
struct PageWords {
  std::vector<uint32_t> ids;
  uint32_t header_len = 0;
  uint32_t footer_len = 0;
};

// Regenerates the words of `c`: the boilerplate host's header, the article, the footer; then each
// edit layer substitutes words so that it changes about edit_shingles[l] of the k-shingles.
void BuildWords(const Vocabulary& vocab, const std::vector<Host>& hosts, int shingle_k, const Content& c,
                PageWords* pw);

}  // namespace neardup::gencrawl
