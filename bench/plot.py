#!/usr/bin/env python3
"""Plots for `memspace bench`: reads PART.csv alone and writes PART*.png. Usage: plot.py PART.csv OUTDIR"""
import sys
print("plot.py: placeholder", file=sys.stderr)
