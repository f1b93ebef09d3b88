"""Read a py-spy profile of serve kept here: `python bench/profiles/summarize.py FILE.txt.gz [N]`.

Each file is py-spy's collapsed stacks (`py-spy record --format raw -r 250`) of one `workbench-magic
serve` process under the MCP Inspector's `--load` (bench section 15: 20,000 `use_tool echo` calls,
10 in flight, server-everything downstream over stdio). Prints the share of samples in each frame
itself (self) and in each frame with what it called (inclusive), the N largest of each.
"""

from __future__ import annotations

import collections
import gzip
import re
import sys


def summarize(path: str, top: int = 30) -> None:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as lines:
        for line in lines:
            stack, _, count = line.rstrip().rpartition(" ")
            n = int(count)
            total += n
            frames = [re.sub(r":\d+\)", ")", frame) for frame in stack.split(";")]
            for frame in set(frames):
                inclusive[frame] += n
            own[frames[-1]] += n
    print(f"{total} samples")
    for title, counts in (("self", own), ("inclusive", inclusive)):
        print(f"--- {title}")
        for frame, n in counts.most_common(top):
            print(f"{n / total:6.1%}  {frame[:140]}")


if __name__ == "__main__":
    summarize(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
