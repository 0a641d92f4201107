"""Whether two augmented datasets hold the same rows (a SLURM run against a local one, a resumed run
against an uninterrupted one): prints the verdict, exits 1 when they differ.

    .venv/bin/python scripts/same_rows.py results/demo/augmented.parquet results/demo-slurm/augmented.parquet
"""

from __future__ import annotations

import argparse
import sys

from spanaug.core import artifacts


def main(first: str, second: str) -> int:
    a, b = (artifacts.read_table(p, artifacts.AUGMENTED).to_pylist() for p in (first, second))
    if a == b:
        print(f"{second}: the same {len(b)} rows as {first}")
        return 0
    differ = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
    print(f"{second}: {len(b)} rows, {differ} of them differ from {first} ({len(a)} rows)")
    return 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", help="an augmented.parquet")
    parser.add_argument("second", help="the augmented.parquet to compare with it")
    args = parser.parse_args()
    sys.exit(main(args.first, args.second))
