# SPDX-License-Identifier: MIT
# The seed's benchmark in R: Rscript seed.R BYTES ACCESSES [WINDOW_S]
# Allocates a double vector (numeric() writes every page), then ACCESSES random reads and random writes.
# With WINDOW_S > 0 each phase is a window of at least that many seconds instead: batches of ACCESSES random
# reads (one gather each), then batches of random writes, until the window has passed; the batches' indices
# come from a pool of POOL indices drawn beforehand (their cache lines, ~128 MB, are out of the 32 MB cache by
# the time a batch comes round again), and the rates count every batch.
# Prints alloc_s, read_ops_per_s, write_ops_per_s, the phases' wall seconds (read_s, write_s) and, read outside the
# timed parts, the fill's page faults and CPU seconds (fill_page_faults, fill_user_s, fill_sys_s), the gathers' and
# scatters' page faults and CPU seconds (proc.time: milliseconds).
cpu <- function(a, b) (b[["user.self"]] + b[["sys.self"]]) - (a[["user.self"]] + a[["sys.self"]])
a <- commandArgs(trailingOnly = TRUE)
n <- as.numeric(a[1]) / 8
k <- as.numeric(a[2])
window <- if (length(a) > 2) as.numeric(a[3]) else 0
POOL <- 2000000
# minor + major page faults (/proc/self/stat) and this process's CPU seconds
faults <- function() { f <- strsplit(readLines("/proc/self/stat"), " ", fixed = TRUE)[[1]]; as.numeric(f[10]) + as.numeric(f[12]) }
# wall clock (clock_gettime, sub-microsecond at today's epoch in a double)
now <- function() as.numeric(Sys.time())
f0 <- faults(); c0 <- proc.time()
t0 <- now()
x <- numeric(n)
t1 <- now()
c1 <- proc.time(); f1 <- faults()
set.seed(1)
# the batches: one of k indices, or (a window) enough for POOL indices, each phase walking them in turn
nb <- if (window > 0) max(1, ceiling(POOL / k)) else 1
ri <- lapply(seq_len(nb), function(i) sample.int(n, k, replace = TRUE))
f2 <- faults(); c2 <- proc.time()
s <- 0
reads <- 0
t2 <- now()
repeat {
  s <- s + sum(x[ri[[reads %% nb + 1]]])
  reads <- reads + 1
  t3 <- now()
  if (t3 - t2 >= window) break
}
c3 <- proc.time(); f3 <- faults()
wi <- if (window > 0) ri else list(sample.int(n, k, replace = TRUE))
f4 <- faults(); c4 <- proc.time()
writes <- 0
t4 <- now()
repeat {
  x[wi[[writes %% nb + 1]]] <- 2
  writes <- writes + 1
  t5 <- now()
  if (t5 - t4 >= window) break
}
c5 <- proc.time(); f5 <- faults()
if (s != 0) stop("wrong sum")
cat(sprintf("alloc_s=%.6f read_ops_per_s=%.1f write_ops_per_s=%.1f fill_page_faults=%.0f fill_user_s=%.6f fill_sys_s=%.6f read_page_faults=%.0f write_page_faults=%.0f read_cpu_s=%.6f write_cpu_s=%.6f read_s=%.6f write_s=%.6f\n",
            t1 - t0, reads * k / max(t3 - t2, 1e-6), writes * k / max(t5 - t4, 1e-6), f1 - f0,
            c1[["user.self"]] - c0[["user.self"]], c1[["sys.self"]] - c0[["sys.self"]], f3 - f2, f5 - f4, cpu(c2, c3),
            cpu(c4, c5), t3 - t2, t5 - t4))
