"""Ray Data: ``patience.ray.solve(dataset, column="deal")`` adds ``probability`` and ``error``
to every row of a Ray Dataset with ``map_batches`` and a callable class, so each actor makes its
solver's tables once and keeps them for every batch it is given."""

from patience._frames import with_answers
from patience._patience import Solver


class _Solve:
    """One actor's solver, applied to each Arrow batch Ray gives it."""

    def __init__(self, column, threads):
        self.column = column
        self.solver = Solver(threads=threads)

    def __call__(self, batch):
        return with_answers(self.solver, batch, self.column)


def solve(dataset, column: str = "deal", *, threads: int = 1, actors=None):
    """``dataset`` with two columns added, ``probability`` (double, null for a bad row) and
    ``error`` (string, null for a good row), as ``patience.solve`` gives them. Each row's answer
    is worked out from that row alone and travels with it, so retried tasks and Ray's ordering
    settings cannot change which answer a row has. ``threads``: solver threads per actor, and
    the CPUs each actor asks Ray for; ``actors``: the most actors (default: as many as the
    cluster's CPUs hold). The pool starts at one actor and grows as CPUs are free, so the tasks
    that read the dataset are never starved of them."""
    import ray

    if actors is None:
        actors = max(1, int(ray.cluster_resources().get("CPU", 1)) // threads)
    return dataset.map_batches(
        _Solve,
        fn_constructor_kwargs={"column": column, "threads": threads},
        batch_format="pyarrow",
        num_cpus=threads,
        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=actors),
    )
