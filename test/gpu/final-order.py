#!/usr/bin/env python3
"""Does the order of a tune's finals decide its winners? For each tuning database and each row
count: the problems with at least four finals, in how many the first final timed (by its `at`)
is the fastest, in how many by more than 5% over the next, and the median lead of each
problem's fastest final over its second. With --problems, each problem's final times in the
order they ran.

    python3 test/gpu/final-order.py out/tuning/sm90-h100-80gb-hbm3-plain.jsonl.gz [--problems]
"""
import gzip
import json
import sys
from collections import defaultdict


def finals(path):
    by_problem = defaultdict(list)
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "result" and r["stage"] == "final" and r["status"] == "OK" and r.get("medianUs"):
                by_problem[r["problemKey"]].append(r)
    for rs in by_problem.values():
        rs.sort(key=lambda r: r["at"])
    return by_problem


def main(paths, show_problems):
    for path in paths:
        by_problem = finals(path)
        print(path)
        buckets = defaultdict(list)
        for key, rs in by_problem.items():
            if len(rs) >= 4:
                buckets[int(key.rsplit(".r", 1)[1])].append((key, [r["medianUs"] for r in rs]))
        for rows in sorted(buckets):
            first = big = 0
            leads = []
            for _, times in buckets[rows]:
                ranked = sorted(times)
                leads.append(ranked[1] / ranked[0])
                if times[0] == ranked[0]:
                    first += 1
                    big += ranked[1] / ranked[0] > 1.05
            leads.sort()
            print(f"  rows {rows:6d}: {len(leads):4d} problems, first final fastest in {first:4d} "
                  f"(by > 5%: {big:3d}), median lead of the fastest {leads[len(leads) // 2]:.3f}")
            if show_problems:
                for key, times in sorted(buckets[rows]):
                    print(f"    {key:44s} " + " ".join(f"{t:.2f}" for t in times))


if __name__ == "__main__":
    args = sys.argv[1:]
    main([a for a in args if not a.startswith("--")], "--problems" in args)
