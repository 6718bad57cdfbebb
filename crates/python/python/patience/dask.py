"""Dask: ``patience.dask.solve(ddf, column="deal")`` adds ``probability`` and ``error`` to every
row of a Dask DataFrame with ``map_partitions``: each partition is solved in place, with the GIL
released, so a worker's threads solve partitions side by side."""

from patience._patience import Solver


def _partition(frame, column, threads):
    """One pandas partition with its answers; also what makes ``meta`` (on an empty frame), so
    the declared types are the ones the partitions have."""
    import pyarrow as pa

    deals = pa.array(frame[column], type=pa.string(), from_pandas=True)
    answers = pa.table(Solver(threads=threads).solve(pa.table({"deal": deals})))
    out = frame.copy()
    for name in ("probability", "error"):
        out[name] = answers.column(name).to_pandas().values
    return out


def solve(ddf, column: str = "deal", *, threads: int = 1):
    """``ddf`` with two columns added, ``probability`` (float64, NaN for a bad row) and ``error``
    (a string, null for a good row), as ``patience.solve`` gives them; the index and the other
    columns are the input's. Each row's answer is worked out from that row alone, so a retried
    task gives the same. ``threads``: solver threads per partition (default 1: a Dask worker
    already runs one task per thread it has)."""
    meta = _partition(ddf._meta, column, 1)
    return ddf.map_partitions(_partition, column, threads, meta=meta)
