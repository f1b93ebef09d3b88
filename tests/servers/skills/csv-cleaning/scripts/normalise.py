"""Normalise the headers of a CSV file read from stdin."""

import sys

header, *rows = sys.stdin.read().splitlines()
print(",".join(h.strip().lower().replace(" ", "_") for h in header.split(",")))
print("\n".join(rows))
