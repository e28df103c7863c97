// Runs the fuzz entry (trace_reader_fuzz.cc) without libFuzzer, so that every compiler and
// CI exercise it: every file of the seed corpus, then deterministic mutations of each seed
// (bit flips, byte overwrites, truncations, inserted and deleted spans, spliced packets)
// and random byte strings. Usage: trace_reader_fuzz_replay [CORPUS_DIR] [MUTATIONS_PER_SEED]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string Mutate(const std::string& seed, const std::vector<std::string>& seeds,
                   std::mt19937_64& rng) {
  std::string s = seed;
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 7) {
      case 0:  // flip one bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // overwrite a byte with an interesting value
        if (!s.empty()) {
          const char values[] = {0, 0x0a, 0x7f, static_cast<char>(0x80), static_cast<char>(0xff)};
          s[pick(s.size())] = values[rng() % sizeof(values)];
        }
        break;
      case 2:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 3:  // insert random bytes
      {
        std::string junk(1 + pick(16), '\0');
        for (char& c : junk) c = static_cast<char>(rng());
        s.insert(pick(s.size() + 1), junk);
      } break;
      case 4:  // delete a span
        if (!s.empty()) {
          const size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<size_t>(32, s.size() - at)));
        }
        break;
      case 5:  // splice the tail of another seed
      {
        const std::string& other = seeds[pick(seeds.size())];
        s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
      } break;
      case 6:  // duplicate a span (repeats packets, interned ids)
        if (!s.empty()) {
          const size_t at = pick(s.size());
          s.insert(at, s.substr(at, 1 + pick(64)));
        }
        break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : WARPSCOPE_FUZZ_CORPUS_DIR;
  const int mutations = argc > 2 ? std::atoi(argv[2]) : 500;
  std::vector<std::string> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    seeds.push_back(buffer.str());
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "trace_reader_fuzz_replay: no seed files in %s\n", dir.c_str());
    return 1;
  }
  size_t runs = 0;
  for (const std::string& seed : seeds) {
    Run(seed);
    ++runs;
  }
  std::mt19937_64 rng(20261121);  // fixed: a failure must reproduce
  for (const std::string& seed : seeds) {
    for (int i = 0; i < mutations; ++i) {
      Run(Mutate(seed, seeds, rng));
      ++runs;
    }
  }
  for (int i = 0; i < 1000; ++i) {
    std::string random(rng() % 256, '\0');
    for (char& c : random) c = static_cast<char>(rng());
    if (i % 2 == 0 && !random.empty()) random[0] = 0x0a;  // look like a packet
    Run(random);
    ++runs;
  }
  std::printf("trace_reader_fuzz_replay: %zu inputs from %zu seeds, no crash\n", runs,
              seeds.size());
  return 0;
}
