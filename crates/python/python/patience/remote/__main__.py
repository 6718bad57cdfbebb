"""`python -m patience.remote`: the same as the `patience-py` console script."""

from .cli import run

run()
