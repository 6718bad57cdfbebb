"""`Remote`: what `patience.connect` returns, a `solve` with `patience.solve`'s signature and
result, answered by daemons over gRPC.

The rows are read by the extension module exactly as a local solve reads them; the ones that can
go (a deal's text, a case's numbers) stream to the daemon in order, with `solve_file`'s failover
between addresses, and the answers come back into the same Arrow table a local solve gives: the
same columns, the same `error` words for a bad row (the daemon reads a deal with the same reader
and words it the same way; a null or a case that does not read is answered before it is sent).
"""

from typing import Optional, Sequence, Union

from patience._patience import outgoing

from . import client
from .client import Wire

_DEALS = Wire("Solver", "SolveStream", client._deal_request, lambda item: item[1])
_EXACT = Wire("Solver", "SolveStream", lambda p: client._deal_request(p, exact=True),
              lambda item: item[1])
_CASES = Wire("RpsService", "SolveRpsStream", client._case_request, lambda item: item[1])


def _result(_item, result):
    return result


class Remote:
    """Daemons at `address` (one, a comma-separated list or a sequence; tried in turn when one
    fails), reached with `token` (sent as `authorization: Bearer`), TLS files, a `deadline` in
    seconds for each `solve`, `batch` rows per request and gzip'd requests. Its channels are
    opened on first use and kept until `close()` (or the end of a `with` block). Pickles as its
    settings, so an engine can ship it to its workers."""

    def __init__(self, address: Union[str, Sequence[str]], token: Optional[str] = None, *,
                 tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None, deadline: Optional[float] = None,
                 batch: int = 256, gzip: bool = True):
        if isinstance(address, str):
            address = address.split(",")
        self.addresses = [a.strip() for a in address if a.strip()]
        if not self.addresses:
            raise ValueError("no daemon address given")
        if batch < 1:
            raise ValueError("batch must be at least 1")
        if (tls_cert is None) != (tls_key is None):
            raise ValueError("tls_cert goes with tls_key")
        self._settings = dict(token=token, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key,
                              deadline=deadline, batch=batch, gzip=gzip)
        self._channels = {}

    def solve(self, data, column: str = "deal", *, game: str = "deals",
              threads: Optional[int] = None, exact: bool = False):
        """`patience.solve`'s answers for `data`, worked out by the daemon (its `--workers`
        decide how many threads; `threads` is checked and otherwise unused). A bad row gets its
        `error`; a daemon that cannot answer raises `RpcFailure` (after failover)."""
        if threads is not None and threads < 1:
            raise ValueError("threads must be at least 1")
        rows, payloads = outgoing(data, column, game=game, exact=exact)
        wire = _CASES if game == "rps" else _EXACT if exact else _DEALS
        probabilities, errors, fractions = [], [], []
        for result in client.answers(enumerate(payloads), self.addresses, wire, _result,
                                     channels=self._channels, **self._settings):
            kind = result.WhichOneof("outcome")
            probabilities.append(result.probability if kind == "probability" else None)
            errors.append(result.error.message if kind == "error" else None)
            if exact:
                fractions.append((result.analysis.exact or None) if kind == "probability" else None)
        return rows.finish(probabilities, errors, fractions if exact else None)

    def close(self):
        """Closes the channels; a later `solve` opens them again."""
        channels, self._channels = self._channels, {}
        for channel in channels.values():
            channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def __getstate__(self):
        return {"addresses": self.addresses, "settings": self._settings}

    def __setstate__(self, state):
        self.addresses, self._settings, self._channels = state["addresses"], state["settings"], {}

    def __repr__(self):
        return f"patience.remote.Remote({','.join(self.addresses)!r})"
