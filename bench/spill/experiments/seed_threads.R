# SPDX-License-Identifier: MIT
# seed.R with the fill's CPU split by thread and the mappings' placement after it (for auto_past_limit.py:
# MSB_SEED_R=this file): Rscript seed_threads.R BYTES ACCESSES
# Beside seed.R's figures: fill_main_user_s/fill_main_sys_s (R's own thread: its page faults), fill_other_sys_s
# (every other thread: memspace's maintenance thread, its write-back), from /proc/self/task/*/stat (10 ms ticks);
# the threads before and after the fill; after it /proc/self/smaps_rollup's Rss, Anonymous, AnonHugePages, FilePmdMapped, Shared_Dirty (kB).
a <- commandArgs(trailingOnly = TRUE)
n <- as.numeric(a[1]) / 8
k <- as.numeric(a[2])
faults <- function() { f <- strsplit(readLines("/proc/self/stat"), " ", fixed = TRUE)[[1]]; as.numeric(f[10]) + as.numeric(f[12]) }
me <- Sys.getpid()
# per thread: c(user, sys) in seconds (the comm field has no spaces here: R, memspace-maint)
threads <- function() {
  out <- list()
  for (t in list.files(sprintf("/proc/%d/task", me))) {
    s <- tryCatch(readLines(sprintf("/proc/%d/task/%s/stat", me, t)), error = function(e) NULL)
    if (is.null(s)) next
    f <- strsplit(sub("^.*\\) ", "", s), " ", fixed = TRUE)[[1]]
    out[[t]] <- c(as.numeric(f[12]), as.numeric(f[13])) / 100
  }
  out
}
split_cpu <- function(a, b) {
  main <- b[[as.character(me)]] - a[[as.character(me)]]
  other <- c(0, 0)
  for (t in names(b)) if (t != as.character(me)) other <- other + b[[t]] - (if (is.null(a[[t]])) c(0, 0) else a[[t]])
  c(main, other)
}
rollup <- function() {
  l <- readLines("/proc/self/smaps_rollup")
  v <- function(key) { x <- grep(paste0("^", key, ":"), l, value = TRUE); if (length(x)) as.numeric(strsplit(trimws(sub(".*:", "", x)), " +")[[1]][1]) else -1 }
  c(v("Rss"), v("Anonymous"), v("AnonHugePages"), v("FilePmdMapped"), v("Shared_Dirty"))
}
th0 <- threads(); f0 <- faults(); c0 <- proc.time()
t0 <- as.numeric(Sys.time())
x <- numeric(n)
t1 <- as.numeric(Sys.time())
c1 <- proc.time(); f1 <- faults(); th1 <- threads()
ro <- rollup()
sp <- split_cpu(th0, th1)
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
cat(sprintf("threads_before=%d threads_after=%d alloc_s=%.6f read_ops_per_s=%.1f write_ops_per_s=%.1f fill_page_faults=%.0f fill_user_s=%.6f fill_sys_s=%.6f fill_main_user_s=%.2f fill_main_sys_s=%.2f fill_other_user_s=%.2f fill_other_sys_s=%.2f rss_kb=%.0f anon_kb=%.0f anon_huge_kb=%.0f file_pmd_kb=%.0f shared_dirty_kb=%.0f\n",
            length(th0), length(th1), t1 - t0, k / max(t3 - t2, 1e-6), k / max(t5 - t4, 1e-6), f1 - f0, c1[["user.self"]] - c0[["user.self"]],
            c1[["sys.self"]] - c0[["sys.self"]], sp[1], sp[2], sp[3], sp[4], ro[1], ro[2], ro[3], ro[4], ro[5]))
