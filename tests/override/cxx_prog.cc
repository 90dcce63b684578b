// A C++ program for the preload tests: containers, strings, exceptions, threads; prints a checksum.
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

int main() {
  unsigned long sum = 0;
  std::vector<std::thread> ts;
  std::vector<unsigned long> part(4);
  for (int t = 0; t < 4; t++)
    ts.emplace_back([t, &part] {
      std::unordered_map<std::string, std::vector<int>> m;
      for (int i = 0; i < 50000; i++) m[std::to_string((i * 7919 + t) % 20011)].push_back(i);
      unsigned long s = 0;
      for (auto &kv : m) s += kv.first.size() * kv.second.size();
      part[t] = s;
    });
  for (auto &t : ts) t.join();
  for (auto v : part) sum += v;
  std::map<int, std::unique_ptr<std::string>> owned;
  for (int i = 0; i < 10000; i++) owned[i] = std::make_unique<std::string>(i % 300, 'x');
  for (auto &kv : owned) sum += kv.second->size();
  int caught = 0;
  for (int i = 0; i < 1000; i++) {
    try {
      throw std::runtime_error(std::string(i % 100, 'e'));
    } catch (const std::exception &e) {
      caught += e.what()[0] == 'e' || i % 100 == 0;
    }
  }
  std::printf("checksum %lu caught %d\n", sum, caught);
  return 0;
}
