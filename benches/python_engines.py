"""The Python package's speed, for benches/python.rs: prints one line per figure, `NAME SECONDS`.

Usage: python python_engines.py DEALS.in PARQUET WHAT...
WHAT: `threads1`, `threads2` (patience.solve in this process, the call alone, median of 3), `ray`,
`spark`, `dask` (each engine's call over the Parquet file's rows, its start-up timed apart).
"""

import os
import statistics
import sys
import time


def one_line_deals(path):
    """Each deal of a UVa file as the one string of 36 cards the package takes."""
    with open(path) as f:
        lines = [line.strip() for line in f if line.strip()]
    return [" ".join(lines[i : i + 9]) for i in range(0, len(lines), 9)]


def in_process(deals_path, threads):
    import pyarrow as pa

    import patience

    deals = pa.array(one_line_deals(deals_path), pa.string())
    times = []
    for _ in range(3):
        start = time.perf_counter()
        out = pa.table(patience.solve(deals, threads=threads))
        times.append(time.perf_counter() - start)
        assert out.num_rows == len(deals) and out["error"].null_count == len(deals)
    return statistics.median(times)


def ray_run(parquet):
    import ray

    import patience.ray

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ds = ray.data.read_parquet(parquet)
    ds.materialize()
    started = time.perf_counter() - start
    try:
        start = time.perf_counter()
        rows = patience.ray.solve(ray.data.read_parquet(parquet)).count()
        took = time.perf_counter() - start
    finally:
        ray.shutdown()
    return started, took, rows


def spark_run(parquet):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import patience.spark

    start = time.perf_counter()
    session = (
        SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    df = session.read.parquet(parquet)
    df.count()
    started = time.perf_counter() - start
    try:
        start = time.perf_counter()
        rows = patience.spark.solve(session.read.parquet(parquet)).count()
        took = time.perf_counter() - start
    finally:
        session.stop()
    return started, took, rows


def dask_run(parquet):
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import patience.dask

    start = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        with Client(cluster):
            ddf = dd.read_parquet(parquet, split_row_groups=True)
            started = time.perf_counter() - start
            start = time.perf_counter()
            rows = len(patience.dask.solve(ddf))
            took = time.perf_counter() - start
    return started, took, rows


def main():
    deals_path, parquet, *what = sys.argv[1:]
    engines = [name for name in what if not name.startswith("threads")]
    # The Parquet file holds the deals of the first call that asks for an engine: the in-process
    # figures come from another file of another size.
    if engines and not os.path.exists(parquet):
        import pyarrow as pa
        import pyarrow.parquet as pq

        # In row groups of 131,072 rows, as Parquet writers cut them (DuckDB's are 122,880 rows):
        # Spark and Dask split a file's reading by its row groups; one group would be one task.
        deals = pa.table({"deal": pa.array(one_line_deals(deals_path), pa.string())})
        pq.write_table(deals, parquet, row_group_size=131072)
    for name in what:
        if name.startswith("threads"):
            print(f"{name} {in_process(deals_path, int(name[len('threads'):]))}", flush=True)
        else:
            started, took, rows = {"ray": ray_run, "spark": spark_run, "dask": dask_run}[name](parquet)
            print(f"{name} {took} {started} {rows}", flush=True)


if __name__ == "__main__":
    main()
