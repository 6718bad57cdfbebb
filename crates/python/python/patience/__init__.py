"""Exact win probabilities for Double Patience (UVa 1637), solved in this process by patience's
Rust engine.

``solve`` takes an Arrow table (anything with ``__arrow_c_stream__`` or ``__arrow_c_array__``:
a pyarrow Table or RecordBatchReader, a polars DataFrame, DuckDB's Arrow output) or a sequence
of strings, and returns an Arrow table of answers, one row per input row, in order. A bad row
gets its ``error`` and never raises. ``Solver`` keeps the engines' tables for reuse and pickles
as its settings. ``patience.ray.solve``, ``patience.spark.solve`` and ``patience.dask.solve``
add the answers to a Ray Dataset's, a Spark or a Dask DataFrame's rows in one call. See
docs/python.md.
"""

from patience._patience import Answers, Solver, solve

__all__ = ["Answers", "Solver", "solve"]
