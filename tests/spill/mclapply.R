# SPDX-License-Identifier: MIT
# mclapply.R ROUNDS: forked workers (parallel::mclapply) read spilled vectors and R's own spilled internal blocks
# (with a 1 MiB threshold R's 1-4 MiB stacks and tables are spilled too) while the parent keeps allocating and
# collecting between forks; every result is checked, and a worker's write never reaches the parent.
rounds <- as.numeric(commandArgs(trailingOnly = TRUE)[1])
library(parallel)
x <- as.numeric(1:2e6)
want <- sum(x)
for (r in 1:rounds) {
  y <- runif(3e5) # parent garbage between forks: spilled blocks allocated and freed
  res <- mclapply(1:6, function(i) {
    x[i] <- -1 # the worker's own copy
    z <- numeric(2e5) + i # a spilled block of the worker's own
    c(sum(x), mean(z))
  }, mc.cores = 2)
  got <- unlist(res)
  exp <- as.vector(rbind(want - (1:6) - 1, 1:6))
  if (length(got) != 12 || !isTRUE(all.equal(got, exp))) {
    cat("FAIL round", r, "got", format(got, digits = 15), "\n")
    quit(status = 1)
  }
  if (x[1] != 1) { cat("FAIL a worker's write reached the parent\n"); quit(status = 1) }
  rm(y); invisible(gc())
}
cat("ok mclapply:", rounds, "rounds of 6 workers\n")
