// ELF function symbols (see elf_symbols.h).
#include "collectors/stacks/elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace warpscope {
namespace {

// A read-only mapping of a whole file, unmapped when it goes.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const uint8_t*>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  // A copy of the T at `offset`, when the file holds all of it.
  template <typename T>
  bool Get(uint64_t offset, T* out) const {
    if (data_ == nullptr || offset > size_ || size_ - offset < sizeof(T)) return false;
    std::memcpy(out, data_ + offset, sizeof(T));
    return true;
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

bool ElfSymbols::Load(const std::string& path) {
  functions_.clear();
  names_.clear();
  MappedFile file(path);
  Elf64_Ehdr eh;
  if (!file.Get(0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr)) {
    return false;
  }
  absolute_ = eh.e_type == ET_EXEC;
  // The full table when the file has one; the exported one otherwise.
  for (const uint32_t wanted : {static_cast<uint32_t>(SHT_SYMTAB), static_cast<uint32_t>(SHT_DYNSYM)}) {
    for (uint32_t i = 0; i < eh.e_shnum; ++i) {
      Elf64_Shdr sh, strings;
      if (!file.Get(eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), &sh) || sh.sh_type != wanted ||
          sh.sh_entsize != sizeof(Elf64_Sym) ||
          !file.Get(eh.e_shoff + uint64_t{sh.sh_link} * sizeof(Elf64_Shdr), &strings)) {
        continue;
      }
      if (strings.sh_offset > file.size() || file.size() - strings.sh_offset < strings.sh_size) {
        continue;
      }
      const char* text = reinterpret_cast<const char*>(file.data() + strings.sh_offset);
      for (uint64_t at = sh.sh_offset; at + sizeof(Elf64_Sym) <= sh.sh_offset + sh.sh_size;
           at += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        if (!file.Get(at, &sym)) break;
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 ||
            sym.st_name >= strings.sh_size) {
          continue;
        }
        const size_t length = strnlen(text + sym.st_name, strings.sh_size - sym.st_name);
        functions_.push_back({sym.st_value, sym.st_size, static_cast<uint32_t>(names_.size())});
        names_.append(text + sym.st_name, length);
        names_.push_back('\0');
      }
    }
    if (!functions_.empty()) break;
  }
  std::sort(functions_.begin(), functions_.end(),
            [](const Function& a, const Function& b) { return a.start < b.start; });
  return true;
}

std::string_view ElfSymbols::Find(uint64_t address) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                             [](uint64_t a, const Function& f) { return a < f.start; });
  if (it == functions_.begin()) return {};
  --it;
  // A symbol of size 0 (hand-written assembly) holds only its own address.
  if (address >= it->start + std::max<uint64_t>(it->size, 1)) return {};
  return std::string_view(names_.data() + it->name);
}

}  // namespace warpscope
