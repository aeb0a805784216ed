"""Checks that a release binary's functions were placed in the link order (scripts/release-flags.sh).

The linker ignores an order it cannot apply without a word (objects compiled without function sections, another
linker), so `make dist` checks the result: the functions of the order found in the binary must lie together, in a
span at most 1.5 times their size (the middle 90% of them, so that a few left where they were do not count).
Usage: check-link-order.py BINARY ORDER.gz
"""
import gzip
import subprocess
import sys

binary, order_path = sys.argv[1], sys.argv[2]
with gzip.open(order_path, "rt") as f:
    wanted = {line.strip().removeprefix(".text.") for line in f if line.strip()}
symbols = {}
nm = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
for line in nm.splitlines():
    fields = line.split()
    if len(fields) == 4 and fields[2] in "tTwW" and fields[3] in wanted:
        symbols.setdefault(fields[3], (int(fields[0], 16), int(fields[1], 16)))
if len(symbols) < len(wanted) // 2:
    sys.exit(f"check-link-order: only {len(symbols)} of the order's {len(wanted)} functions are in {binary}: "
             "run scripts/link-order.sh")
placed = sorted(symbols.values())
middle = placed[len(placed) // 20: len(placed) - len(placed) // 20]
size = sum(length for _, length in middle)
span = middle[-1][0] + middle[-1][1] - middle[0][0]
print(f"check-link-order: {len(symbols)} of {len(wanted)} ordered functions, {size / 2**20:.1f} MiB "
      f"over a span of {span / 2**20:.1f} MiB")
if span > 1.5 * size:
    sys.exit("check-link-order: the functions were not placed in the order (did the link apply it?)")
