// Pre-flight checks of output paths (see output_path.h).
#include "analyzers/render/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "proto/settings/setting_error.h"

namespace warpscope {
namespace {

// The directory a new file at `path` goes into ("." for a bare name).
std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Whether `path`, which stat() did not find (`stat_errno`), can be made: the directory it goes
// into exists and this user may create files in it. `refuse` words the error.
template <typename Refuse>
absl::Status CheckNewEntry(const std::string& path, int stat_errno, const Refuse& refuse) {
  if (stat_errno == ENOTDIR) {
    return refuse(": a part of it that should be a directory is a file; choose another path");
  }
  if (stat_errno != ENOENT) {
    return refuse(absl::StrCat(": ", std::strerror(stat_errno), "; choose another path"));
  }
  struct stat st {};
  const std::string dir = DirectoryOf(path);
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return refuse(absl::StrCat(": directory ", QuoteValue(dir),
                                 " does not exist; create it first or choose another path"));
    }
    return refuse(absl::StrCat(": directory ", QuoteValue(dir), ": ", std::strerror(errno),
                               "; choose another path"));
  }
  if (!S_ISDIR(st.st_mode)) {
    return refuse(absl::StrCat(": ", QuoteValue(dir), " is not a directory; choose another path"));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return refuse(absl::StrCat(": cannot create files in ", QuoteValue(dir), " (",
                               std::strerror(errno), "); choose another path"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> CheckOutputPath(const std::string& path, std::string_view flag,
                                     std::string_view example_name) {
  const std::string flag_name(flag);
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(flag_name, " ", QuoteValue(path), why));
  };
  if (path.empty()) return absl::InvalidArgumentError(flag_name + " needs a file name");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      std::string dir = path;
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      return refuse(absl::StrCat(
          " is a directory; name a file in it, e.g. ",
          QuoteValue(absl::StrCat(dir == "/" ? "" : dir, "/", std::string(example_name)))));
    }
    if (::access(path.c_str(), W_OK) != 0) {
      return refuse(absl::StrCat(" exists and cannot be replaced (", std::strerror(errno),
                                 "); choose another path"));
    }
    return true;
  }
  if (absl::Status made = CheckNewEntry(path, errno, refuse); !made.ok()) return made;
  return false;
}

absl::StatusOr<bool> CheckOutputDirectory(const std::string& path, std::string_view flag) {
  const std::string flag_name(flag);
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(flag_name, " ", QuoteValue(path), why));
  };
  if (path.empty()) return absl::InvalidArgumentError(flag_name + " needs a directory name");
  std::string dir = path;  // "job/" goes into ".", as "job" does
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return refuse(" is a file, not a directory; choose another path");
    }
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      return refuse(absl::StrCat(": cannot create files in it (", std::strerror(errno),
                                 "); choose another path"));
    }
    return true;
  }
  if (absl::Status made = CheckNewEntry(dir, errno, refuse); !made.ok()) return made;
  return false;
}

absl::Status WriteOutputFile(const std::string& path, const std::string& flag,
                             const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) {
    return absl::InternalError(
        absl::StrCat("cannot write ", flag, " ", QuoteValue(path), ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace warpscope
