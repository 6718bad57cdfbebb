"""What the engines' integrations share: a batch's rows with ``probability`` and ``error``
added, each answered from its own row (so retried tasks and any order of partitions give the
same)."""

from patience._patience import Solver

#: The columns the integrations add, after the input's own.
ADDED = ("probability", "error")


def with_answers(solver: Solver, batch, column: str):
    """``batch`` (a pyarrow RecordBatch, as Spark gives it, or a Table, as Ray Data does) with
    ``probability`` and ``error`` after its columns for each of its rows, solved by ``solver``;
    of the same kind."""
    import pyarrow as pa

    answers = pa.table(solver.solve(batch.select([column]), column))
    names = list(batch.schema.names) + list(ADDED)
    if isinstance(batch, pa.Table):
        added = [answers.column(name) for name in ADDED]
        return pa.Table.from_arrays(list(batch.columns) + added, names=names)
    added = [answers.column(name).combine_chunks() for name in ADDED]
    return pa.RecordBatch.from_arrays(list(batch.columns) + added, names=names)
