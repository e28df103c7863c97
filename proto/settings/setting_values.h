// Values of WARPSCOPE_* settings read one way by the injected library, its collectors, the
// launcher and the analyzers (header-only: the collectors build without the session library).
#ifndef WARPSCOPE_PROTO_SETTINGS_SETTING_VALUES_H_
#define WARPSCOPE_PROTO_SETTINGS_SETTING_VALUES_H_

#include <charconv>
#include <cstdint>
#include <string_view>

namespace warpscope {

// Without leading and trailing blanks (spaces, tabs).
inline std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// 1/0, true/false, yes/no, on/off in any case, blanks around allowed; empty is false.
// False (and *out unchanged) for anything else.
inline bool ParseBoolSetting(std::string_view text, bool* out) {
  text = TrimBlanks(text);
  auto is = [&](std::string_view word) {
    if (text.size() != word.size()) return false;
    for (size_t i = 0; i < word.size(); ++i) {
      char c = text[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != word[i]) return false;
    }
    return true;
  };
  if (is("1") || is("true") || is("yes") || is("on")) {
    *out = true;
    return true;
  }
  if (text.empty() || is("0") || is("false") || is("no") || is("off")) {
    *out = false;
    return true;
  }
  return false;
}

// A whole decimal number in [lo, hi], blanks around allowed.
inline bool ParseWholeNumber(std::string_view text, uint64_t lo, uint64_t hi, uint64_t* out) {
  text = TrimBlanks(text);
  if (text.empty()) return false;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_SETTINGS_SETTING_VALUES_H_
