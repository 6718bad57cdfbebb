#!/usr/bin/env python3
"""Deal files answered by Spark tasks running `patience`, collected in order: what
`patience solve FILES` prints, byte for byte (docs/shards.md, "Spark").

Two ways, one Spark session (pyspark, `local[2]` unless --master says otherwise):
- shards (what this prints): one task per shard, task K running `patience solve --shard K/N FILES`
  on files every executor can read (a shared volume); partition order is shard order, so the
  collected output is the whole run's, bad deals' `error:` lines and their numbers included.
- --pipe IN OUT: the deals of the file IN as records, one deal per record (its 36 cards on one
  line), spread over --pipe-partitions partitions and piped through `patience solve -` with
  `RDD.pipe`, one process per partition; the collected lines go to OUT. For a file of good deals
  this is `patience solve IN` too; a bad deal's `error:` line would name its partition's standard
  input and numbering instead of the file's, which is why shards are the way for real inputs.

Exit status: the whole run's (0, or 1 when some deal was bad); 2 when a task failed.

Usage: spark_shards.py [--patience PATH] [--shards N] [--pipe IN OUT] FILE...
"""

import argparse
import os
import subprocess
import sys


def deals_as_records(path):
    """Each deal of a file of good UVa deals as one line of 36 cards: nine non-blank lines."""
    with open(path, encoding="utf-8") as f:
        lines = [line.split() for line in f if line.strip()]
    for i in range(0, len(lines), 9):
        yield " ".join(card for pile in lines[i : i + 9] for card in pile)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--patience", default="patience")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--pipe", nargs=2, metavar=("IN", "OUT"))
    parser.add_argument("--pipe-partitions", type=int, default=8)
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
        if args.pipe:
            records = list(deals_as_records(args.pipe[0]))
            lines = (
                sc.parallelize(records, args.pipe_partitions)
                .pipe(f"{patience} solve --workers 1 --quiet -")
                .collect()
            )
            with open(args.pipe[1], "w", encoding="utf-8") as out:
                out.writelines(line + "\n" for line in lines)
    except Exception as e:  # a task's failure, said once
        print(f"spark_shards: {e}", file=sys.stderr)
        return 2
    finally:
        sc.stop()
    sys.stdout.buffer.write(b"".join(out for _, out in parts))
    return status


if __name__ == "__main__":
    sys.exit(main())
