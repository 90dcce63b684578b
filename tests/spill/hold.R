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
# forked workers (parallel::mclapply) read the spilled vector; their writes stay their own
if (.Platform$OS.type == "unix") {
  r <- parallel::mclapply(1:2, function(i) {
    s <- sum(x[((i - 1) * 131072 + 1):(i * 131072)])
    x[i] <<- -1
    s
  }, mc.cores = 2)
  want <- sapply(1:2, function(i) sum(as.numeric(((i - 1) * 131072 + 1):(i * 131072))))
  if (!isTRUE(all.equal(unlist(r), want))) { cat("FAIL mclapply workers read wrong values\n"); quit(status = 1) }
  if (x[1] != 1 || x[2] != 2) { cat("FAIL a worker's write reached the parent\n"); quit(status = 1) }
}
cat("ok R:", mib, "MiB held and verified\n")
