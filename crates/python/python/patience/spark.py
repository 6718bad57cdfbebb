"""Spark: ``patience.spark.solve(df, column="deal")`` adds ``probability`` and ``error`` to every
row of a Spark DataFrame, solved in the Python workers by ``mapInArrow``: each task reads its
partition as Arrow batches and solves them in place, with the GIL released."""

from patience._frames import with_answers
from patience._patience import Solver


def _task_threads():
    """The CPUs Spark gave this task (``spark.task.cpus``, 1 unless set): Spark runs as many
    tasks at once as an executor has cores for, so more threads would oversubscribe them."""
    from pyspark import TaskContext

    context = TaskContext.get()
    try:
        return max(1, int(context.cpus())) if context is not None else 1
    except AttributeError:  # a PySpark without TaskContext.cpus
        return 1


def solve(df, column: str = "deal", *, threads=None):
    """``df`` with two columns added, ``probability`` (double, null for a bad row) and ``error``
    (string, null for a good row), as ``patience.solve`` gives them. Each row's answer is worked
    out from that row alone, so a retried task or any partitioning gives the same answers.
    ``threads``: solver threads per task (default: the task's CPUs)."""
    from pyspark.sql.types import DoubleType, StringType, StructField, StructType

    schema = StructType(
        list(df.schema.fields)
        + [StructField("probability", DoubleType(), True), StructField("error", StringType(), True)]
    )

    def partition(batches):
        # One solver per task: its tables are made once for all the partition's batches.
        solver = Solver(threads=threads or _task_threads())
        for batch in batches:
            yield with_answers(solver, batch, column)

    return df.mapInArrow(partition, schema)
