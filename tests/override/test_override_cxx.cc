// C++ operator new/delete with memspace as the allocator: std::bad_alloc and the new-handler on every throwing
// form, nothrow forms returning NULL after trying the handler, aligned new of any size honouring the alignment.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>
}
#include <cstdint>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>
#include "memspace.h"

static volatile std::size_t huge = SIZE_MAX / 2;
static int handler_calls;
static void *volatile sink; // keeps the compiler from removing an unused allocation
static void counting_handler() {
  if (++handler_calls >= 3) std::set_new_handler(nullptr);
}
static void throwing_handler() {
  handler_calls++;
  throw std::bad_alloc();
}

template <typename F> static bool throws_bad_alloc(F f) {
  try {
    f();
  } catch (const std::bad_alloc &) {
    return true;
  }
  return false;
}

static void throwing_forms(void **) {
  assert_true(throws_bad_alloc([] { ::operator delete(::operator new(huge)); }));
  assert_true(throws_bad_alloc([] { ::operator delete[](::operator new[](huge)); }));
  assert_true(throws_bad_alloc([] { ::operator delete(::operator new(huge, std::align_val_t(64)), std::align_val_t(64)); }));
  assert_true(throws_bad_alloc([] { ::operator delete[](::operator new[](huge, std::align_val_t(4096)), std::align_val_t(4096)); }));
}

static void new_handler_on_every_form(void **) {
  for (int form = 0; form < 4; form++) {
    handler_calls = 0;
    std::set_new_handler(counting_handler);
    bool thrown = throws_bad_alloc([form] {
      switch (form) {
      case 0: sink = ::operator new(huge); break;
      case 1: sink = ::operator new[](huge); break;
      case 2: sink = ::operator new(huge, std::align_val_t(128)); break;
      default: sink = ::operator new[](huge, std::align_val_t(128)); break;
      }
    });
    assert_true(thrown);
    assert_int_equal(handler_calls, 3);
  }
}

static void nothrow_forms(void **) {
  for (int form = 0; form < 4; form++) {
    for (int h = 0; h < 2; h++) {
      handler_calls = 0;
      std::set_new_handler(h ? throwing_handler : counting_handler);
      void *p;
      switch (form) {
      case 0: p = ::operator new(huge, std::nothrow); break;
      case 1: p = ::operator new[](huge, std::nothrow); break;
      case 2: p = ::operator new(huge, std::align_val_t(256), std::nothrow); break;
      default: p = ::operator new[](huge, std::align_val_t(256), std::nothrow); break;
      }
      assert_null(p);
      assert_int_equal(handler_calls, h ? 1 : 3);
    }
  }
  std::set_new_handler(nullptr);
  void *p = ::operator new(100, std::nothrow);
  assert_non_null(p);
  ::operator delete(p, std::nothrow);
}

struct alignas(512) Big { char c[700]; };

static void aligned_new_any_size(void **) {
  for (std::size_t a = 16; a <= (1u << 20); a <<= 1)
    for (std::size_t sz = 1; sz < 4 * a; sz = sz * 3 + 5) {
      void *p = ::operator new(sz, std::align_val_t(a));
      assert_int_equal(reinterpret_cast<std::uintptr_t>(p) % a, 0);
      assert_true(ms_is_ours(p));
      std::memset(p, 1, sz);
      ::operator delete(p, sz, std::align_val_t(a));
    }
  Big *b = new Big[7];
  assert_int_equal(reinterpret_cast<std::uintptr_t>(b) % 512, 0);
  delete[] b;
}

static void containers(void **) {
  std::map<std::string, std::vector<int>> m;
  for (int i = 0; i < 20000; i++) m[std::to_string(i * 7919 % 100003)].push_back(i);
  long sum = 0;
  for (auto &kv : m) sum += kv.second.size();
  assert_int_equal(sum, 20000);
  int *sized = new int[100];
  ::operator delete[](sized, 100 * sizeof(int));
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(throwing_forms),
      cmocka_unit_test(new_handler_on_every_form),
      cmocka_unit_test(nothrow_forms),
      cmocka_unit_test(aligned_new_any_size),
      cmocka_unit_test(containers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
