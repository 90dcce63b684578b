# SPDX-License-Identifier: MIT
# The R worker of fits_abab.py: holds a 512 MiB double vector (numeric() writes every page) and answers, on stdin,
# 'r S' / 'w S' (a slice of S seconds of random reads or writes, batches of 200,000 from a pool of 2,000,000
# indices) with 'ops wall_s cpu_s' on stdout; 'q' quits.
n <- 512 * 1024 * 1024 / 8
batch <- 200000
x <- numeric(n)
set.seed(1)
idx <- lapply(seq_len(10), function(i) sample.int(n, batch, replace = TRUE))
nb <- length(idx)
j <- 0
s <- 0
now <- function() as.numeric(Sys.time())
cpu <- function() { p <- proc.time(); p[["user.self"]] + p[["sys.self"]] }
con <- file("stdin")
open(con)
cat("ready\n")
flush(stdout())
repeat {
  line <- readLines(con, n = 1)
  if (length(line) == 0) break
  f <- strsplit(line, " ", fixed = TRUE)[[1]]
  if (f[1] == "q") break
  dur <- as.numeric(f[2])
  c0 <- cpu()
  t0 <- now()
  done <- 0
  repeat {
    if (f[1] == "r") s <- s + sum(x[idx[[j %% nb + 1]]]) else x[idx[[j %% nb + 1]]] <- 0
    j <- j + 1
    done <- done + 1
    t1 <- now()
    if (t1 - t0 >= dur) break
  }
  cat(sprintf("%.0f %.6f %.6f\n", done * batch, t1 - t0, cpu() - c0))
  flush(stdout())
}
if (s != 0) stop("wrong sum")
