// How a refused setting is reported: the value echoed one way everywhere (QuoteValue) and,
// for WARPSCOPE_* variables, a typed error so that each caller names the setting the way its
// user gave it (the library: the variable; `warpscope record`: the flag). Header-only: the
// core, the collectors and the CLI all include it.
#ifndef WARPSCOPE_PROTO_SETTINGS_SETTING_ERROR_H_
#define WARPSCOPE_PROTO_SETTINGS_SETTING_ERROR_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace warpscope {

// Bytes of a value shown before it is cut.
inline constexpr size_t kQuotedValueMaxBytes = 80;

// The value in single quotes, on one line and short enough to read: control characters are
// escaped (\n, \t, \xNN) and a value longer than kQuotedValueMaxBytes is cut at a character
// boundary, followed by "..." and its length: 'xxxx...' (100000 bytes).
inline std::string QuoteValue(std::string_view value) {
  size_t keep = value.size();
  if (keep > kQuotedValueMaxBytes) {
    keep = kQuotedValueMaxBytes;
    // Back up over UTF-8 continuation bytes so that no character is split.
    while (keep > 0 && (static_cast<unsigned char>(value[keep]) & 0xC0) == 0x80) --keep;
  }
  std::string out = "'";
  for (size_t i = 0; i < keep; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (keep < value.size()) {
    out += "...' (" + std::to_string(value.size()) + " bytes)";
  } else {
    out += "'";
  }
  return out;
}

// A WARPSCOPE_* value that was refused.
struct SettingError {
  std::string variable;  // e.g. "WARPSCOPE_DELAY"
  std::string value;     // as given
  // The rest of the sentence after the quoted value, with its leading separator:
  // " is not a number of seconds", ": out of range: use 1us .. 1s".
  std::string problem;

  // "WARPSCOPE_DELAY='abc' is not a number of seconds"
  std::string ForVariable() const { return variable + "=" + QuoteValue(value) + problem; }
  // "-y/--delay 'abc' is not a number of seconds"
  std::string ForFlag(std::string_view flag) const {
    return std::string(flag) + " " + QuoteValue(value) + problem;
  }
};

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_SETTINGS_SETTING_ERROR_H_
