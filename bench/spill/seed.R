# SPDX-License-Identifier: MIT
# The seed's benchmark in R: Rscript seed.R BYTES ACCESSES
# Allocates a double vector (numeric() writes every page), then ACCESSES random reads and random writes.
a <- commandArgs(trailingOnly = TRUE)
n <- as.numeric(a[1]) / 8
k <- as.numeric(a[2])
t0 <- as.numeric(Sys.time())
x <- numeric(n)
t1 <- as.numeric(Sys.time())
set.seed(1)
ri <- sample.int(n, k, replace = TRUE)
t2 <- as.numeric(Sys.time())
s <- sum(x[ri])
t3 <- as.numeric(Sys.time())
wi <- sample.int(n, k, replace = TRUE)
t4 <- as.numeric(Sys.time())
x[wi] <- 2
t5 <- as.numeric(Sys.time())
if (s != 0) stop("wrong sum")
cat(sprintf("alloc_s=%.6f read_ops_per_s=%.1f write_ops_per_s=%.1f\n", t1 - t0, k / max(t3 - t2, 1e-6),
            k / max(t5 - t4, 1e-6)))
