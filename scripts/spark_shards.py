#!/usr/bin/env python3
"""Deal files answered by Spark tasks running `patience`, collected in order: what
`patience solve FILES` prints, byte for byte (docs/shards.md, "Spark").

One Spark session (pyspark, `local[2]` unless --master says otherwise), one task per shard: task K
runs `patience solve --shard K/N FILES` on files every executor can read (a shared volume);
partition order is shard order, so the collected output is the whole run's, bad deals' `error:`
lines and their numbers included.

Deals held as records (a DataFrame's column) are not this script's: `patience.spark.solve` (the
Python package, docs/python.md) answers them in the Python workers with `mapInArrow`, each answer
beside its row. (This script's `--pipe` mode, deals piped through `patience solve -` with
`RDD.pipe`, went for that reason: its error lines named a partition's standard input instead of
the row.)

Exit status: the whole run's (0, or 1 when some deal was bad); 2 when a task failed.

Usage: spark_shards.py [--patience PATH] [--shards N] [--master URL] FILE...
"""

import argparse
import os
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--patience", default="patience")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    files = [os.path.abspath(f) for f in args.files]
    patience = os.path.abspath(args.patience) if os.sep in args.patience else args.patience

    from pyspark import SparkConf, SparkContext

    conf = SparkConf().setMaster(args.master).setAppName("patience-shards")
    # Quiet and local: no UI port taken, no event log.
    conf.set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false")
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    n = args.shards

    def shard(k, _):
        run = subprocess.run(
            [patience, "solve", "--workers", "1", "--quiet", "--shard", f"{k}/{n}", *files],
            capture_output=True,
        )
        if run.returncode not in (0, 1):
            raise RuntimeError(f"shard {k}/{n}: {run.stderr.decode(errors='replace')}")
        yield (run.returncode, run.stdout)

    try:
        parts = sc.parallelize(range(n), n).mapPartitionsWithIndex(shard).collect()
        status = max(code for code, _ in parts)
    except Exception as e:  # a task's failure, said once
        print(f"spark_shards: {e}", file=sys.stderr)
        return 2
    finally:
        sc.stop()
    sys.stdout.buffer.write(b"".join(out for _, out in parts))
    return status


if __name__ == "__main__":
    sys.exit(main())
