// ElfSymbols: the function symbols of one ELF file (its .symtab, else .dynsym), to name native
// return addresses that dladdr(3) cannot: functions a program does not export. Read once per
// module, from the file, with every offset checked against its size. Pure.
#ifndef WARPSCOPE_COLLECTORS_STACKS_ELF_SYMBOLS_H_
#define WARPSCOPE_COLLECTORS_STACKS_ELF_SYMBOLS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warpscope {

class ElfSymbols {
 public:
  // False when the file cannot be read or is not a 64-bit ELF file.
  bool Load(const std::string& path);
  // The function that holds `address`: an offset from the module's load base for shared
  // objects and position-independent programs, an absolute address for others (see
  // absolute()). Empty when none does.
  std::string_view Find(uint64_t address) const;
  // ET_EXEC: symbols hold absolute addresses.
  bool absolute() const { return absolute_; }
  size_t size() const { return functions_.size(); }

 private:
  struct Function {
    uint64_t start;
    uint64_t size;
    uint32_t name;  // offset in names_
  };
  std::vector<Function> functions_;  // sorted by start
  std::string names_;
  bool absolute_ = false;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_STACKS_ELF_SYMBOLS_H_
