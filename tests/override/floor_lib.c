/* SPDX-License-Identifier: MIT */
/* floor_lib.c: a shared library with nothing in it, preloaded by test_startup.sh as the floor that any preloaded
   library pays (the dynamic loader's work for one more object): libmemspace's own cost is the difference */
int ms_test_floor_marker(void) { return 0; }
