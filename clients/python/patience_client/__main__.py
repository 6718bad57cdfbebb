"""`python -m patience_client`: the same as the `patience-py` console script."""

from .cli import run

run()
