// The control channel's protocol, one way for the injected library (libinject/control_channel.h,
// the server) and `warpscope start|stop|dump|status` (the client): the socket's name, the
// command words, and one request line and one reply line per connection. Header-only, libc/std.
//
//   request:  warpscope-ctl/1 COMMAND [ARG...]\n         COMMAND: start | stop | dump | status
//   reply:    warpscope-ctl/1 RESULT TEXT\n              RESULT:  ok | error | refused
//
// Words are separated by one space. ARGs are encoded words (EncodeControlWord). TEXT is prose
// for people, except in the ok reply to `status`: KEY=VALUE fields (FormatControlStatus), each
// VALUE an encoded word. Version 1 commands take no ARG; a later version may add some.
#ifndef WARPSCOPE_PROTO_CONTROL_CONTROL_PROTOCOL_H_
#define WARPSCOPE_PROTO_CONTROL_CONTROL_PROTOCOL_H_

#include <sys/socket.h>
#include <sys/un.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warpscope {

// The first word of every request and reply; a peer that speaks another version gets an error.
inline constexpr std::string_view kControlProtocolVersion = "warpscope-ctl/1";
// The abstract socket of process PID is "\0warpscope-ctl.PID" (no file: it goes with the
// process, and /proc/net/unix lists it as "@warpscope-ctl.PID"). Abstract names belong to a
// network namespace: the CLI reaches the processes of its own.
inline constexpr std::string_view kControlSocketPrefix = "warpscope-ctl.";
// The longest line either side reads, '\n' included; a longer request is malformed.
inline constexpr size_t kControlMaxLineBytes = 4096;

enum class ControlCommand {
  kStart,   // open a capture window now
  kStop,    // close the open capture window
  kDump,    // write the flight recorder's buffer out
  kStatus,  // who and where the process is, and its capture state (ControlStatus)
};
inline constexpr ControlCommand kControlCommands[] = {ControlCommand::kStart, ControlCommand::kStop,
                                                      ControlCommand::kDump, ControlCommand::kStatus};

enum class ControlResult {
  kOk,       // done; TEXT says what was done ("window 2 opened")
  kError,    // not done: a malformed request, or a command the process cannot carry out now
  kRefused,  // not done: the peer is neither the process's effective user nor root
};

inline std::string_view ControlCommandName(ControlCommand command) {
  switch (command) {
    case ControlCommand::kStart: return "start";
    case ControlCommand::kStop: return "stop";
    case ControlCommand::kDump: return "dump";
    case ControlCommand::kStatus: return "status";
  }
  return "?";
}

inline std::optional<ControlCommand> ParseControlCommandName(std::string_view word) {
  for (ControlCommand c : kControlCommands) {
    if (ControlCommandName(c) == word) return c;
  }
  return std::nullopt;
}

inline std::string_view ControlResultName(ControlResult result) {
  switch (result) {
    case ControlResult::kOk: return "ok";
    case ControlResult::kError: return "error";
    case ControlResult::kRefused: return "refused";
  }
  return "?";
}

// The socket's name (starting with the NUL byte of an abstract name).
inline std::string ControlSocketName(int64_t pid) {
  std::string name(1, '\0');
  name += kControlSocketPrefix;
  name += std::to_string(pid);
  return name;
}

// The address to bind or connect to for `pid`; *length counts the name's bytes only (an
// abstract name is not NUL-terminated).
inline void ControlSocketAddress(int64_t pid, sockaddr_un* address, socklen_t* length) {
  const std::string name = ControlSocketName(pid);
  std::memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  std::memcpy(address->sun_path, name.data(), name.size());  // < 40 bytes of 108
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
}

// The pid in a path as /proc/net/unix shows it ("@warpscope-ctl.1234"); nullopt for any other.
inline std::optional<int64_t> PidFromControlSocketPath(std::string_view path) {
  if (path.empty() || path[0] != '@') return std::nullopt;
  path.remove_prefix(1);
  if (path.substr(0, kControlSocketPrefix.size()) != kControlSocketPrefix) return std::nullopt;
  path.remove_prefix(kControlSocketPrefix.size());
  int64_t pid = 0;
  auto [end, ec] = std::from_chars(path.data(), path.data() + path.size(), pid);
  if (path.empty() || ec != std::errc() || end != path.data() + path.size() || pid <= 0) {
    return std::nullopt;
  }
  return pid;
}

// A word on the line: bytes up to and including ' ', '%', DEL and the control characters become
// %XX, so that a path or host with spaces stays one word. An empty value encodes as nothing:
// a field reads "job=", and an empty ARG is never sent.
inline std::string EncodeControlWord(std::string_view value) {
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c <= ' ' || c == '%' || c == 0x7F) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += ch;
    }
  }
  return out;
}

// The inverse of EncodeControlWord; false for a '%' not followed by two hex digits.
inline bool DecodeControlWord(std::string_view word, std::string* out) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  out->clear();
  for (size_t i = 0; i < word.size(); ++i) {
    if (word[i] != '%') {
      *out += word[i];
      continue;
    }
    if (i + 2 >= word.size()) return false;
    const int hi = hex(word[i + 1]);
    const int lo = hex(word[i + 2]);
    if (hi < 0 || lo < 0) return false;
    *out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

// The words of a line split at single spaces (empty words kept, so "a  b" has three).
inline std::vector<std::string_view> SplitControlLine(std::string_view line) {
  std::vector<std::string_view> words;
  size_t start = 0;
  while (true) {
    const size_t space = line.find(' ', start);
    words.push_back(line.substr(start, space == std::string_view::npos ? line.npos : space - start));
    if (space == std::string_view::npos) return words;
    start = space + 1;
  }
}

struct ControlRequest {
  ControlCommand command = ControlCommand::kStatus;
  std::vector<std::string> args;  // decoded
};

// The request line, '\n' included; an empty arg is left out (it would be an empty word).
inline std::string FormatControlRequest(const ControlRequest& request) {
  std::string line(kControlProtocolVersion);
  line += ' ';
  line += ControlCommandName(request.command);
  for (const std::string& arg : request.args) {
    if (arg.empty()) continue;
    line += ' ';
    line += EncodeControlWord(arg);
  }
  line += '\n';
  return line;
}

// Parses a request line (without its '\n'); false with *error saying what was expected and
// what was found.
inline bool ParseControlRequest(std::string_view line, ControlRequest* request, std::string* error) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const std::vector<std::string_view> words = SplitControlLine(line);
  if (words[0] != kControlProtocolVersion) {
    *error = "expected a request starting with " + std::string(kControlProtocolVersion) +
             ", got '" + EncodeControlWord(words[0].substr(0, 40)) + "'";
    return false;
  }
  if (words.size() < 2) {
    *error = "no command after " + std::string(kControlProtocolVersion) +
             "; commands: start, stop, dump, status";
    return false;
  }
  std::optional<ControlCommand> command = ParseControlCommandName(words[1]);
  if (!command) {
    *error = "unknown command '" + EncodeControlWord(words[1].substr(0, 40)) +
             "'; commands: start, stop, dump, status";
    return false;
  }
  request->command = *command;
  request->args.clear();
  for (size_t i = 2; i < words.size(); ++i) {
    std::string arg;
    if (words[i].empty() || !DecodeControlWord(words[i], &arg)) {
      *error = "argument " + std::to_string(i - 1) + " is not an encoded word";
      return false;
    }
    request->args.push_back(std::move(arg));
  }
  return true;
}

struct ControlReply {
  ControlResult result = ControlResult::kError;
  std::string text;  // one line; a '\n' or '\r' in it is sent as a space
};

// The reply line, '\n' included.
inline std::string FormatControlReply(const ControlReply& reply) {
  std::string line(kControlProtocolVersion);
  line += ' ';
  line += ControlResultName(reply.result);
  line += ' ';
  const size_t room = kControlMaxLineBytes - line.size() - 1;
  for (char c : std::string_view(reply.text).substr(0, room)) line += (c == '\n' || c == '\r') ? ' ' : c;
  line += '\n';
  return line;
}

inline bool ParseControlReply(std::string_view line, ControlReply* reply, std::string* error) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  const size_t first = line.find(' ');
  if (line.substr(0, first) != kControlProtocolVersion || first == std::string_view::npos) {
    *error = "expected a reply starting with " + std::string(kControlProtocolVersion) + ", got '" +
             EncodeControlWord(line.substr(0, 40)) + "'";
    return false;
  }
  const std::string_view rest = line.substr(first + 1);
  const size_t second = rest.find(' ');
  const std::string_view result = rest.substr(0, second);
  if (result == "ok") {
    reply->result = ControlResult::kOk;
  } else if (result == "error") {
    reply->result = ControlResult::kError;
  } else if (result == "refused") {
    reply->result = ControlResult::kRefused;
  } else {
    *error = "expected ok, error or refused in the reply, got '" +
             EncodeControlWord(result.substr(0, 40)) + "'";
    return false;
  }
  reply->text = second == std::string_view::npos ? "" : std::string(rest.substr(second + 1));
  return true;
}

// What `status` answers: the process's place in its job (the variables of job_variables.h, as
// the trace header has them) and its capture state.
struct ControlStatus {
  int64_t pid = 0;                    // the process's own pid (its pid namespace's)
  std::optional<int64_t> rank;        // global rank; none outside a job
  std::optional<int64_t> local_rank;  // rank on this host
  std::optional<int64_t> world_size;  // ranks in the job
  std::string host;                   // hostname
  std::string job_id;                 // the header's job id ("SLURM_JOB_ID=123"), or empty
  std::string trace_path;             // the trace being written
  bool window_open = false;           // a capture window is open now
  uint64_t windows = 0;               // windows opened so far, the open one included
  std::string mode;                   // capture mode (WARPSCOPE_CAPTURE: whole, signal, ...)
  bool flight_recorder = false;       // the flight recorder is on (`dump` can write)
};

// The ok reply's TEXT: pid=.. rank=.. local_rank=.. world_size=.. host=.. job=.. trace=..
// window=open|closed windows=.. mode=.. flight=on|off; an unknown number is left empty.
inline std::string FormatControlStatus(const ControlStatus& s) {
  auto number = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : ""; };
  std::string text = "pid=" + std::to_string(s.pid);
  text += " rank=" + number(s.rank);
  text += " local_rank=" + number(s.local_rank);
  text += " world_size=" + number(s.world_size);
  text += " host=" + EncodeControlWord(s.host);
  text += " job=" + EncodeControlWord(s.job_id);
  text += " trace=" + EncodeControlWord(s.trace_path);
  text += s.window_open ? " window=open" : " window=closed";
  text += " windows=" + std::to_string(s.windows);
  text += " mode=" + EncodeControlWord(s.mode);
  text += s.flight_recorder ? " flight=on" : " flight=off";
  return text;
}

// Reads FormatControlStatus's TEXT. Keys it does not know are skipped (a later version may add
// some); pid is required.
inline bool ParseControlStatus(std::string_view text, ControlStatus* status, std::string* error) {
  *status = ControlStatus();
  bool have_pid = false;
  for (std::string_view field : SplitControlLine(text)) {
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) {
      if (field.empty()) continue;
      *error = "status field '" + EncodeControlWord(field.substr(0, 40)) + "' has no '='";
      return false;
    }
    const std::string_view key = field.substr(0, eq);
    std::string value;
    if (!DecodeControlWord(field.substr(eq + 1), &value)) {
      *error = "status field " + std::string(key) + " is not an encoded word";
      return false;
    }
    auto integer = [&](std::optional<int64_t>* out) {
      if (value.empty()) return true;
      int64_t v = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || end != value.data() + value.size()) {
        *error = "status field " + std::string(key) + " is not a whole number: '" + value + "'";
        return false;
      }
      *out = v;
      return true;
    };
    std::optional<int64_t> n;
    if (key == "pid") {
      if (!integer(&n)) return false;
      have_pid = n.has_value();
      status->pid = n.value_or(0);
    } else if (key == "rank") {
      if (!integer(&status->rank)) return false;
    } else if (key == "local_rank") {
      if (!integer(&status->local_rank)) return false;
    } else if (key == "world_size") {
      if (!integer(&status->world_size)) return false;
    } else if (key == "host") {
      status->host = value;
    } else if (key == "job") {
      status->job_id = value;
    } else if (key == "trace") {
      status->trace_path = value;
    } else if (key == "window") {
      status->window_open = value == "open";
    } else if (key == "windows") {
      if (!integer(&n)) return false;
      status->windows = n && *n > 0 ? static_cast<uint64_t>(*n) : 0;
    } else if (key == "mode") {
      status->mode = value;
    } else if (key == "flight") {
      status->flight_recorder = value == "on";
    }
  }
  if (!have_pid) {
    *error = "status has no pid field";
    return false;
  }
  return true;
}

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_CONTROL_CONTROL_PROTOCOL_H_
