"""Ray Data: ``patience.ray.solve(dataset, column="deal")`` adds ``probability`` and ``error``
to every row of a Ray Dataset with ``map_batches`` and a callable class, so each actor makes its
solver's tables once and keeps them for every batch it is given."""

from patience._frames import with_answers
from patience._patience import Solver

#: Rows per call of an actor: big enough that a call's fixed costs (the hand-off, the answers'
#: table) are nothing beside its solving (about a second on two threads), small enough that the
#: answers stream out while the rest is solved and that a retried call redoes little.
BATCH_ROWS = 65536


class _Solve:
    """One actor's solver, applied to each Arrow batch Ray gives it."""

    def __init__(self, column, threads):
        self.column = column
        self.solver = Solver(threads=threads)

    def __call__(self, batch):
        return with_answers(self.solver, batch, self.column)


def _node_cpus(ray):
    """The most CPUs one alive node has: one actor's threads cannot spread over nodes."""
    cpus = [node.get("Resources", {}).get("CPU", 0) for node in ray.nodes() if node.get("Alive")]
    return max(1, int(max(cpus, default=0)) or int(ray.cluster_resources().get("CPU", 1)))


def solve(dataset, column: str = "deal", *, threads=None, actors=None, batch_size=BATCH_ROWS):
    """``dataset`` with two columns added, ``probability`` (double, null for a bad row) and
    ``error`` (string, null for a good row), as ``patience.solve`` gives them. Each row's answer
    is worked out from that row alone and travels with it, so retried tasks and Ray's ordering
    settings cannot change which answer a row has.

    ``threads``: solver threads per actor (default: a node's CPUs, so one actor solves a whole
    block on all of them). An actor asks Ray for one CPU fewer than its threads (half a CPU for
    one thread): the tasks that read the dataset always find a CPU beside the pool, and the
    solving threads use it when they are done. So the pool starts whole at once, with no
    growing. ``actors``: how many (default: as many as the cluster's CPUs hold). ``batch_size``:
    rows per call of an actor (``None``: a whole block at a time)."""
    import ray

    if threads is None:
        threads = _node_cpus(ray)
    if threads < 1:
        raise ValueError(f"threads must be 1 or more, got {threads}")
    if actors is None:
        actors = max(1, int(ray.cluster_resources().get("CPU", 1)) // threads)
    return dataset.map_batches(
        _Solve,
        fn_constructor_kwargs={"column": column, "threads": threads},
        batch_format="pyarrow",
        batch_size=batch_size,
        num_cpus=threads - 1 if threads > 1 else 0.5,
        concurrency=actors,
    )
