# SPDX-License-Identifier: MIT
# r_growth.R N: R's allocation pattern, for `memspace bench heap` (case rscript): a vector grown one element at
# a time (`v <- c(v, x)`, a new vector and a copy each step) and a list of N/4 vectors of varied lengths.
# Prints lengths and a sum, the same under every allocator.
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) > 0) as.integer(args[1]) else 20000L
v <- c()
for (i in seq_len(n)) v <- c(v, i * 0.5)
l <- list()
for (i in seq_len(n %/% 4)) l[[i]] <- rep(i, 1 + (i * 37) %% 500)
cat(length(v), sum(v), length(l), sum(lengths(l)), "\n")
