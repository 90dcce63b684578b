// A C++ module a C program loads with dlopen (as Python loads a C++ extension): operator new running out of memory
// must call the module's new-handler and throw std::bad_alloc (the nothrow forms: return NULL), as under glibc.
// Each function returns a code the host (cxx_dlopen_host.c) prints; 0 means what the C++ standard says happened.
#include <cstddef>
#include <cstdint>
#include <new>

static int calls;
static void *volatile sink; // keeps the compiler from removing a new/delete pair
static void give_up() { // a handler that gives up at its second call: the runtime then throws
  if (++calls >= 2) std::set_new_handler(nullptr);
}
static void throw_now() { // a handler that throws itself
  calls++;
  throw std::bad_alloc();
}
static const std::size_t huge = SIZE_MAX / 4; // below PTRDIFF_MAX: refused by the allocator, not by the compiler

extern "C" __attribute__((visibility("default"))) int cxx_throwing(int aligned) {
  calls = 0;
  std::set_new_handler(give_up);
  try {
    sink = aligned ? ::operator new(huge, std::align_val_t(64)) : ::operator new(huge);
    return 1; // no exception
  } catch (const std::bad_alloc &) {
    return calls == 2 ? 0 : 2; // the handler ran until it gave up
  }
}

extern "C" __attribute__((visibility("default"))) int cxx_nothrow(int aligned, int throwing_handler) {
  calls = 0;
  std::set_new_handler(throwing_handler ? throw_now : give_up);
  void *p = aligned ? ::operator new(huge, std::align_val_t(64), std::nothrow) : ::operator new(huge, std::nothrow);
  std::set_new_handler(nullptr);
  if (p) return 1;
  return calls == (throwing_handler ? 1 : 2) ? 0 : 2;
}

// an ordinary allocation still works afterwards
extern "C" __attribute__((visibility("default"))) int cxx_works(void) {
  char *p = new char[100];
  sink = p;
  p[99] = 1;
  delete[] p;
  return 0;
}
