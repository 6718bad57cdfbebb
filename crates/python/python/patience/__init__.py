"""Exact win probabilities for Double Patience (UVa 1637), solved in this process by patience's
Rust engine.

``solve`` takes an Arrow table (anything with ``__arrow_c_stream__`` or ``__arrow_c_array__``:
a pyarrow Table or RecordBatchReader, a polars DataFrame, DuckDB's Arrow output) or a sequence
of strings, and returns an Arrow table of answers, one row per input row, in order. A bad row
gets its ``error`` and never raises. ``Solver`` keeps the engines' tables for reuse and pickles
as its settings. ``patience.ray.solve``, ``patience.spark.solve`` and ``patience.dask.solve``
add the answers to a Ray Dataset's, a Spark or a Dask DataFrame's rows in one call.
``connect`` gives the same ``solve`` answered by a daemon (``pip install 'patience[remote]'``).
See docs/python.md.
"""

from typing import TYPE_CHECKING, Optional, Sequence, Union

from patience._patience import Answers, Solver, solve

if TYPE_CHECKING:
    from patience.remote import Remote

__all__ = ["Answers", "Solver", "connect", "solve"]


def connect(address: Union[str, Sequence[str]], token: Optional[str] = None, **options) -> "Remote":
    """A ``patience.remote.Remote``: ``solve`` with this module's signature and result, answered
    by the daemon at ``address`` (``http://HOST:PORT``, ``https://HOST:PORT``; several, comma
    separated or in a list, for failover), sending ``token`` as a bearer token. ``options``: TLS
    files (``tls_ca``, ``tls_cert``, ``tls_key``), ``deadline`` seconds, ``batch``, ``gzip``."""
    try:
        from patience.remote import Remote
    except ImportError as e:
        raise ImportError(
            f"patience.connect needs the remote extra: pip install 'patience[remote]' ({e})"
        ) from e
    return Remote(address, token, **options)
