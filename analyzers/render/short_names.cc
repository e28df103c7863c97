// Short kernel names (see short_names.h): a one-pass reader of demangled names that writes
// them at a level of detail, and the search for the lowest level that keeps names apart.
#include "analyzers/render/short_names.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "analyzers/render/output.h"

namespace warpscope {
namespace {

// Names nested deeper than this are shown whole: the reader recurses once per bracket.
constexpr int kMaxNesting = 256;
// Template levels tried before the qualified form; real kernels need three or four.
constexpr int kMaxTemplateLevel = 64;
constexpr std::string_view kAnonymous = "(anonymous namespace)";

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '.' || c == '~' || c == '-' || static_cast<unsigned char>(c) >= 0x80;
}

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// What may follow the word `operator`, longest first so that `operator<<` is not `operator<`.
constexpr std::string_view kOperatorSymbols[] = {
    "<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "==", "!=", "&&",
    "||",  "++",  "--",  "+=",  "-=", "*=", "/=", "%=", "&=", "|=", "^=", "->", "+",
    "-",   "*",   "/",   "%",   "^",  "&",  "|",  "~",  "!",  "=",  "<",  ">",  ","};

// Reads a demangled name once and writes it at one level of ShortNameForm. Each qualified
// name (a::b<c>::d) is read whole, then written as the level asks: its last part (with the
// scope a lambda or an operator is declared in), or every part. Parameter lists are read to
// find where they end, and left out.
class ShortNameWriter {
 public:
  ShortNameWriter(std::string_view name, int level)
      : s_(name),
        qualified_(level >= kQualifiedNameLevel),
        depth_(qualified_ ? kMaxNesting : level) {}

  // The function: the last qualified name outside every bracket, as the level writes it;
  // nullopt when the brackets do not balance.
  std::optional<std::string> Function() {
    std::string return_type_and_rest;
    if (!Sequence("", depth_, &return_type_and_rest) || pos_ != s_.size() || function_.empty()) {
      return std::nullopt;
    }
    return function_;
  }

 private:
  enum class PartKind { kName, kLambda, kOperator, kAnonymous };
  // One part of a qualified name, with its template arguments as the level writes them.
  struct Part {
    PartKind kind = PartKind::kName;
    std::string text;
  };

  char Peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  bool At(std::string_view text) const { return s_.substr(pos_).starts_with(text); }

  // Reads up to a character of `closers` outside brackets (left unread) or the end, writing
  // the short form to *out; template arguments are written `depth` levels deep.
  bool Sequence(std::string_view closers, int depth, std::string* out) {
    if (++nesting_ > kMaxNesting) return false;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (closers.find(c) != std::string_view::npos) break;
      if (At("::*")) {  // a pointer to member, "int (ns::C::*)()"
        out->append("::*");
        pos_ += 3;
      } else if (IsNameChar(c) || c == '{' || At("::") || At(kAnonymous)) {
        if (!QualifiedName(depth, out)) return false;
      } else if (c == '(' || c == '[') {  // a cast "(ns::Mode)1", a bound "[4]", a tag
        const std::string_view close = c == '(' ? ")" : "]";
        out->push_back(c);
        ++pos_;
        if (!Sequence(close, depth, out)) return false;
        out->push_back(close[0]);
        ++pos_;
      } else if (c == ')' || c == ']' || c == '}') {
        return false;  // closes what was never opened
      } else {
        out->push_back(c);
        ++pos_;
      }
    }
    --nesting_;
    return closers.empty() || pos_ < s_.size();
  }

  bool QualifiedName(int depth, std::string* out) {
    std::vector<Part> parts;
    if (At("::")) pos_ += 2;  // the global scope
    while (true) {
      Part& part = parts.emplace_back();
      if (!ReadPart(depth, &part)) return false;
      if (!At("::") || At("::*")) break;
      pos_ += 2;
    }
    std::string written = WriteParts(parts);
    if (nesting_ == 1) function_ = written;
    out->append(written);
    return true;
  }

  bool ReadPart(int depth, Part* part) {
    const size_t begin = pos_;
    if (At(kAnonymous)) {
      part->kind = PartKind::kAnonymous;
      pos_ += kAnonymous.size();
    } else if (Peek() == '{') {  // {lambda(float)#1}, {unnamed type#1}
      part->kind = PartKind::kLambda;
      std::string text;
      if (constexpr std::string_view kLambda = "{lambda("; At(kLambda)) {
        // The lambda's parameter types, short as the level writes every other name.
        pos_ += kLambda.size();
        text = kLambda;
        if (!Sequence(")", depth, &text)) return false;
      }
      const size_t rest = pos_;
      while (pos_ < s_.size() && s_[pos_] != '}') ++pos_;
      if (pos_ == s_.size()) return false;
      ++pos_;
      part->text = text.empty() ? std::string(s_.substr(begin, pos_ - begin))
                                : text + std::string(s_.substr(rest, pos_ - rest));
      return true;
    } else {
      while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
      if (pos_ == begin) return false;
      if (s_.substr(begin, pos_ - begin) == "operator") {
        part->kind = PartKind::kOperator;
        ReadOperatorSymbol();
      }
    }
    part->text = std::string(s_.substr(begin, pos_ - begin));
    // "operator< <int>": the space keeps the template's '<' apart from the symbol.
    if (part->kind == PartKind::kOperator && At(" <")) ++pos_;
    if (Peek() == '<' && (part->kind == PartKind::kName || part->kind == PartKind::kOperator)) {
      ++pos_;
      std::vector<std::string> args;
      while (true) {
        std::string& arg = args.emplace_back();
        if (!Sequence(",>", depth - 1, &arg)) return false;
        arg = std::string(TrimSpaces(arg));
        if (s_[pos_++] == '>') break;
      }
      if (depth >= 1) {
        if (part->text.ends_with('<') || part->text.ends_with('>')) part->text.push_back(' ');
        part->text.push_back('<');
        for (size_t i = 0; i < args.size(); ++i) part->text += (i == 0 ? "" : ", ") + args[i];
        part->text.push_back('>');
      }
    }
    if (Peek() == '(') {  // a function's parameters: read, not written
      ++pos_;
      std::string parameters;
      if (!Sequence(")", depth, &parameters)) return false;
      ++pos_;
      SkipQualifiers();
    }
    return true;
  }

  void ReadOperatorSymbol() {
    if (Peek() == ' ') {  // operator new, operator delete[], conversions: up to the '('
      int angles = 0;
      while (pos_ < s_.size() && (s_[pos_] != '(' || angles > 0)) {
        if (s_[pos_] == '<') ++angles;
        if (s_[pos_] == '>' && angles > 0) --angles;
        ++pos_;
      }
      return;
    }
    for (std::string_view symbol : kOperatorSymbols) {
      if (At(symbol)) {
        pos_ += symbol.size();
        return;
      }
    }
  }

  // "f(int) const", "operator()() const::{lambda...}": qualifiers of a member function.
  void SkipQualifiers() {
    for (bool more = true; more;) {
      more = false;
      for (std::string_view q : {" const", " volatile", " &&", " &"}) {
        if (At(q) && !IsNameChar(Peek(q.size()))) {
          pos_ += q.size();
          more = true;
        }
      }
    }
  }

  std::string WriteParts(const std::vector<Part>& parts) const {
    if (qualified_) {
      std::string all;
      for (const Part& p : parts) all += (all.empty() ? "" : "::") + p.text;
      return all;
    }
    // A lambda ({lambda(float)#1}) or operator() names nothing alone: the function or class
    // it is declared in comes with it.
    const Part& last = parts.back();
    if (last.kind != PartKind::kLambda && last.kind != PartKind::kOperator) return last.text;
    for (size_t i = parts.size() - 1; i-- > 0;) {
      if (parts[i].kind == PartKind::kName) return parts[i].text + "::" + last.text;
    }
    return last.text;
  }

  std::string_view s_;
  size_t pos_ = 0;
  bool qualified_;
  int depth_;
  int nesting_ = 0;
  std::string function_;
};

// The level after `level` for names whose forms at `level` did not differ from the level
// before (`same_as_before`): deeper template arguments cannot tell them apart any more.
int NextLevel(int level, bool same_as_before) {
  if (level < kQualifiedNameLevel && (same_as_before || level >= kMaxTemplateLevel)) {
    return kQualifiedNameLevel;
  }
  return level + 1;
}

}  // namespace

std::string ShortNameForm(std::string_view name, int level) {
  const std::string_view s = TrimSpaces(name);
  // Not a C++ signature: "[CUDA memcpy HtoD]", "<unnamed kernel>", an API or mangled name.
  if (level >= kWholeNameLevel || s.empty() || s.front() == '[' || s.front() == '<' ||
      s.find_first_of("(<:") == std::string_view::npos) {
    return std::string(name);
  }
  std::optional<std::string> function = ShortNameWriter(s, level).Function();
  return function.has_value() ? *std::move(function) : std::string(name);
}

std::string BaseFunctionName(std::string_view name) { return ShortNameForm(name, 0); }

KernelNames KernelNames::Short(const std::vector<std::string_view>& names) {
  std::vector<std::string_view> pending(names);
  std::sort(pending.begin(), pending.end());
  pending.erase(std::unique(pending.begin(), pending.end()), pending.end());
  auto shown = std::make_shared<std::unordered_map<std::string, std::string>>();
  std::unordered_map<std::string, std::string_view> holder;  // a shown form -> its name
  std::vector<std::string> before(pending.size());           // forms at the level before
  for (int level = 0; !pending.empty();) {
    std::vector<std::string> forms;
    std::unordered_map<std::string, int> count;
    bool same_as_before = level > 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      forms.push_back(ShortNameForm(pending[i], level));
      same_as_before = same_as_before && forms.back() == before[i];
    }
    for (const std::string& form : forms) ++count[form];
    std::vector<std::string_view> still;
    std::vector<std::string> still_forms;
    for (size_t i = 0; i < pending.size(); ++i) {
      // Whole names differ by definition: the last level settles every name left.
      if (level == kWholeNameLevel || (count[forms[i]] == 1 && !holder.contains(forms[i]))) {
        holder.emplace(forms[i], pending[i]);
        (*shown)[std::string(pending[i])] = std::move(forms[i]);
      } else {
        still.push_back(pending[i]);
        still_forms.push_back(std::move(forms[i]));
      }
    }
    pending = std::move(still);
    before = std::move(still_forms);
    level = NextLevel(level, same_as_before);
  }
  // A short form could still equal a name left whole at the last level ("k<int>" written so,
  // beside "void k<int>(int)"): both are then shown whole, which no two names share.
  for (bool clash = true; clash;) {
    clash = false;
    std::unordered_map<std::string, int> uses;
    for (const auto& [name, form] : *shown) ++uses[form];
    for (auto& [name, form] : *shown) {
      if (uses[form] > 1 && form != name) {
        form = name;
        clash = true;
      }
    }
  }
  KernelNames result;
  result.shown_ = std::move(shown);
  return result;
}

std::string KernelNames::Show(std::string_view name, bool text) const {
  if (shown_ != nullptr) {
    if (auto it = shown_->find(std::string(name)); it != shown_->end()) return it->second;
  }
  return ShortKernelName(name, text);
}

std::string KernelNames::ShortenIn(std::string_view text) const {
  if (shown_ == nullptr) return std::string(text);
  // Longest first, so that a name inside another's template arguments is not swapped alone.
  std::vector<std::pair<std::string_view, std::string_view>> swaps;
  for (const auto& [name, form] : *shown_) {
    if (form != name && name.find_first_of("(<") != std::string::npos) {
      swaps.emplace_back(name, form);
    }
  }
  std::sort(swaps.begin(), swaps.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const std::string_view rest = text.substr(i);
    auto swap = std::find_if(swaps.begin(), swaps.end(),
                             [&](const auto& s) { return rest.starts_with(s.first); });
    if (swap == swaps.end()) {
      out.push_back(text[i++]);
    } else {
      out.append(swap->second);
      i += swap->first.size();
    }
  }
  return out;
}

}  // namespace warpscope
