// SPDX-License-Identifier: MIT
// cxx_map.cpp: C++ new/delete churn: each of --threads threads runs rounds on its own std::map<std::string,
// std::vector<int>> (keys longer than the small-string buffer, so every key is a heap string): insert a batch of
// keys built by concatenation, look up, erase a third, and every few rounds clear the map; plus a
// std::unordered_map<int, std::string> and a std::list<std::string> built and dropped. Counted ops are the
// container operations (each does one or more new/delete). Output: the same lines as wl.h.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#include <atomic>
extern "C" {
#include "wl.h"
}

static long rounds;
static std::atomic<long> total_ops;

static void worker(int id) {
  uint64_t r = wl_seed(1000 + (uint64_t)id);
  std::map<std::string, std::vector<int>> m;
  long ops = 0;
  for (long rd = 0; rd < rounds; rd++) {
    for (int i = 0; i < 2000; i++) {
      unsigned k = (unsigned)(wl_rand(&r) % 50000);
      std::string key = std::string("session-key-") + std::to_string(k) + "-" + std::to_string(k * 2654435761u % 997);
      std::vector<int> v((size_t)(k % 24));
      for (size_t j = 0; j < v.size(); j++) v[j] = (int)(k + j);
      m[key] = std::move(v);
      ops++;
    }
    for (int i = 0; i < 2000; i++) {
      unsigned k = (unsigned)(wl_rand(&r) % 50000);
      std::string key = std::string("session-key-") + std::to_string(k) + "-" + std::to_string(k * 2654435761u % 997);
      auto it = m.find(key);
      if (it != m.end()) {
        for (size_t j = 0; j < it->second.size(); j++)
          if (it->second[j] != (int)(k + j)) wl_fail("map value changed");
        if (i % 3 == 0) m.erase(it);
      }
      ops++;
    }
    if (rd % 16 == 15) { ops += (long)m.size(); m.clear(); }
    if (rd % 4 == 0) {
      std::unordered_map<int, std::string> u;
      std::list<std::string> l;
      for (int i = 0; i < 1000; i++) {
        u.emplace(i, std::string(24 + i % 40, 'a' + i % 26));
        l.push_back(std::string(20 + i % 50, 'z'));
      }
      ops += 2000;
    }
  }
  total_ops += ops;
}

int main(int argc, char **argv) {
  wl_args_t a = wl_parse(argc, argv, "cxx-map: std::map/std::string/std::vector churn per thread");
  rounds = wl_scaled(80, a.scale, 4);
  double t0 = wl_now(), c0 = wl_cpu();
  std::vector<std::thread> th;
  for (int t = 0; t < a.threads; t++) th.emplace_back(worker, t);
  for (auto &t : th) t.join();
  double secs = wl_now() - t0, cpu = wl_cpu() - c0;
  wl_report(secs, cpu, (double)total_ops.load());
  return 0;
}
