// Run under LD_PRELOAD=libmemspace.so with a fixed process space: operator new throws std::bad_alloc when the
// space is full (not a crash), containers work, and memory comes back after delete. Prints "ok", exits 0.
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <vector>

int main() {
  std::vector<std::unique_ptr<char[]>> blocks;
  bool caught = false;
  try {
    for (int i = 0; i < 100000; i++) blocks.emplace_back(new char[64 << 10]);
  } catch (const std::bad_alloc &) {
    caught = true;
  }
  if (!caught) { std::printf("never ran out\n"); return 2; }
  size_t n = blocks.size();
  blocks.clear();
  blocks.shrink_to_fit();
  std::vector<std::string> strings;
  for (int i = 0; i < 1000; i++) strings.push_back(std::string(100 + i, 'x'));
  char *nothrow = new (std::nothrow) char[1 << 30];
  if (nothrow) { std::printf("nothrow new of 1 GiB succeeded in an 8 MiB space\n"); return 3; }
  std::printf("ok %zu %zu\n", n, strings.size());
  return 0;
}
