# SPDX-License-Identifier: MIT
# Many mid-size blocks in R: Rscript midsize.R MIB ACCESSES
# Holds MIB numeric vectors of 1 MiB in a list (each written by numeric(), then a marker every 4 KiB), then
# ACCESSES random page reads and ACCESSES random page writes across them (the R twin of midsize.py). A fixed
# spill threshold above 1 MiB leaves every vector in RAM (killed past a cgroup's limit); auto spills them once the
# budget runs short. Prints one line: alloc_s=.. read_ops_per_s=.. write_ops_per_s=..
a <- commandArgs(trailingOnly = TRUE)
n <- as.integer(a[1])
k <- as.integer(a[2])
per <- 131072L                    # doubles in 1 MiB
marks <- seq(1L, per, by = 512L)  # one per 4 KiB page
t0 <- as.numeric(Sys.time())
l <- vector("list", n)
for (i in seq_len(n)) {
  v <- numeric(per)
  v[marks] <- i
  l[[i]] <- v
}
rm(v)
t1 <- as.numeric(Sys.time())
set.seed(1)
bi <- sample.int(n, k, replace = TRUE)
pg <- sample.int(length(marks), k, replace = TRUE)
t2 <- as.numeric(Sys.time())
s <- 0
for (j in seq_len(k)) s <- s + l[[bi[j]]][marks[pg[j]]]
t3 <- as.numeric(Sys.time())
if (s != sum(bi)) stop("wrong sum")
bw <- sample.int(n, k, replace = TRUE)
t4 <- as.numeric(Sys.time())
for (j in seq_len(k)) l[[bw[j]]][marks[pg[j]] + 1L] <- 7
t5 <- as.numeric(Sys.time())
bad <- sum(vapply(seq(1L, n, by = max(1L, n %/% 64L)), function(i) any(l[[i]][marks] != i), logical(1)))
if (bad) stop(sprintf("%d vectors lost their markers", bad))
cat(sprintf("alloc_s=%.6f read_ops_per_s=%.1f write_ops_per_s=%.1f\n", t1 - t0, k / max(t3 - t2, 1e-6),
            k / max(t5 - t4, 1e-6)))
