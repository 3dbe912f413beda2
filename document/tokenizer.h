// Tokenizer: visible text -> case-folded words -> 64-bit word hashes.
//
// Rules (the same everywhere in neardup, so that signatures agree across tiers):
//  - Input is UTF-8. Invalid byte sequences are treated as separators, never an error.
//  - A word is a maximal run of word characters:
//      ASCII letters and digits; Latin-1 letters (U+00C0-U+00FF except U+00D7, U+00F7);
//      Latin Extended-A and -B (U+0100-U+024F); Latin Extended Additional (U+1E00-U+1EFF);
//      Greek (U+0370-U+03FF); Cyrillic (U+0400-U+04FF).
//    Everything else (punctuation, symbols, spaces, other scripts' marks) separates words, except:
//  - CJK ideographs (U+4E00-U+9FFF, U+3400-U+4DBF), Hiragana/Katakana (U+3040-U+30FF) and Hangul
//    syllables (U+AC00-U+D7AF) each form a one-character word (these scripts have no spaces).
//  - An apostrophe (U+0027 or U+2019) between two word characters is dropped and joins them:
//    "don't" -> "dont".
//  - Case folding: ASCII, Latin-1, Latin Extended-A (upper/lower pairs), Greek and Cyrillic capitals
//    fold to lower case; U+00DF and other caseless letters are kept as they are.
//  - A word's hash is XXH3-64 of its folded UTF-8 bytes (seed 0).
//
// Thread safety: all functions are pure and reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace neardup {

// Appends the hash of every word of `text`, in order, to *word_hashes. Returns the number added.
size_t HashWords(std::string_view text, std::vector<uint64_t>* word_hashes);

// The folded words themselves (for tests, debugging and the generator's vocabulary).
std::vector<std::string> Tokenize(std::string_view text);

// Hash of one already-folded word, as HashWords computes it.
uint64_t WordHash(std::string_view folded_word);

namespace internal {
// Tokenize a byte at a time (without the 64-byte block scan of plain ASCII and the 16-byte scan of
// ASCII runs): the reference its tests compare against.
std::vector<std::string> TokenizeBytewise(std::string_view text);
}  // namespace internal

}  // namespace neardup
