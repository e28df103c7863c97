// Expanding trace arguments into files (trace_paths.h).
#include "analyzers/model/trace_paths.h"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "proto/settings/setting_error.h"

namespace warpscope {
namespace {

// The .wst files in folder `dir`, by name.
std::vector<std::string> TracesInFolder(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".wst") == 0) {
        files.push_back(dir + (dir.back() == '/' ? "" : "/") + name);
      }
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The files glob(3) finds for `pattern`, by name (glob sorts them).
std::vector<std::string> GlobMatches(const std::string& pattern) {
  std::vector<std::string> files;
  glob_t found{};
  if (::glob(pattern.c_str(), 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) files.emplace_back(found.gl_pathv[i]);
  }
  ::globfree(&found);
  return files;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandTracePaths(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& arg : args) {
    struct stat st {};
    const bool exists = ::stat(arg.c_str(), &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
      std::vector<std::string> in_dir = TracesInFolder(arg);
      if (in_dir.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(arg, " is a folder without .wst traces"));
      }
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (!exists && arg.find_first_of("*?[") != std::string::npos) {
      std::vector<std::string> matched = GlobMatches(arg);
      if (matched.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(QuoteValue(arg), " matches no file; check the pattern"));
      }
      files.insert(files.end(), matched.begin(), matched.end());
    } else {
      files.push_back(arg);  // a missing file is the loader's to report, with its reason
    }
  }
  if (files.empty()) return absl::InvalidArgumentError("no traces given");
  return files;
}

}  // namespace warpscope
