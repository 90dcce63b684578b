# SPDX-License-Identifier: MIT
# hold.R MIB: holds MIB MiB in one double vector (allocated, written, then every value verified).
mib <- as.numeric(commandArgs(trailingOnly = TRUE)[1])
n <- mib * 1024 * 1024 / 8
x <- numeric(n)
chunk <- 2^20
for (s in seq(1, n, by = chunk)) {
  e <- min(s + chunk - 1, n)
  x[s:e] <- as.numeric(s:e)
}
bad <- 0
for (s in seq(1, n, by = chunk)) {
  e <- min(s + chunk - 1, n)
  bad <- bad + sum(x[s:e] != s:e)
}
if (bad > 0) { cat("FAIL", bad, "wrong values\n"); quit(status = 1) }
cat("ok R:", mib, "MiB held and verified\n")
