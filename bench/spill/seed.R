# SPDX-License-Identifier: MIT
# The seed's benchmark in R: Rscript seed.R BYTES ACCESSES
# Allocates a double vector (numeric() writes every page), then ACCESSES random reads and random writes.
# Prints alloc_s, read_ops_per_s, write_ops_per_s and, read outside the timed parts, the fill's page faults and CPU
# seconds (fill_page_faults, fill_user_s, fill_sys_s), the gather's and scatter's page faults and CPU seconds.
cpu <- function(a, b) (b[["user.self"]] + b[["sys.self"]]) - (a[["user.self"]] + a[["sys.self"]])
a <- commandArgs(trailingOnly = TRUE)
n <- as.numeric(a[1]) / 8
k <- as.numeric(a[2])
# minor + major page faults (/proc/self/stat) and this process's CPU seconds
faults <- function() { f <- strsplit(readLines("/proc/self/stat"), " ", fixed = TRUE)[[1]]; as.numeric(f[10]) + as.numeric(f[12]) }
f0 <- faults(); c0 <- proc.time()
t0 <- as.numeric(Sys.time())
x <- numeric(n)
t1 <- as.numeric(Sys.time())
c1 <- proc.time(); f1 <- faults()
set.seed(1)
ri <- sample.int(n, k, replace = TRUE)
f2 <- faults(); c2 <- proc.time()
t2 <- as.numeric(Sys.time())
s <- sum(x[ri])
t3 <- as.numeric(Sys.time())
c3 <- proc.time(); f3 <- faults()
wi <- sample.int(n, k, replace = TRUE)
f4 <- faults(); c4 <- proc.time()
t4 <- as.numeric(Sys.time())
x[wi] <- 2
t5 <- as.numeric(Sys.time())
c5 <- proc.time(); f5 <- faults()
if (s != 0) stop("wrong sum")
cat(sprintf("alloc_s=%.6f read_ops_per_s=%.1f write_ops_per_s=%.1f fill_page_faults=%.0f fill_user_s=%.6f fill_sys_s=%.6f read_page_faults=%.0f write_page_faults=%.0f read_cpu_s=%.6f write_cpu_s=%.6f\n",
            t1 - t0, k / max(t3 - t2, 1e-6), k / max(t5 - t4, 1e-6), f1 - f0, c1[["user.self"]] - c0[["user.self"]],
            c1[["sys.self"]] - c0[["sys.self"]], f3 - f2, f5 - f4, cpu(c2, c3), cpu(c4, c5)))
