"""What the engines' integrations share: a table's rows with ``probability`` and ``error`` added,
answered row by row in place (so retried tasks and any order of partitions give the same)."""

import os

from patience._patience import Solver

#: The columns the integrations add, after the input's own.
ADDED = ("probability", "error")


def cpus():
    """The CPUs this process may run on (its affinity, as a container or a scheduler set it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def with_answers(solver: Solver, batch, column: str):
    """``batch`` (a pyarrow RecordBatch or Table) with ``probability`` and ``error`` after its
    columns, for each of its rows, solved by ``solver``; of the same kind."""
    import pyarrow as pa

    answers = pa.table(solver.solve(batch.select([column]), column))
    names = list(batch.schema.names) + list(ADDED)
    if isinstance(batch, pa.Table):
        return pa.Table.from_arrays(
            list(batch.columns) + [answers.column(name) for name in ADDED], names=names
        )
    return pa.RecordBatch.from_arrays(
        list(batch.columns) + [answers.column(name).combine_chunks() for name in ADDED],
        names=names,
    )
