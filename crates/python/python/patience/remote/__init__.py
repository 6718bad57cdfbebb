"""The patience daemon from Python (`pip install 'patience[remote]'`, which brings grpcio):

- `Remote` (what `patience.connect` returns): `solve` with `patience.solve`'s signature and
  result, answered by daemons;
- `solve_file`: deal files streamed through daemons, the answers `patience solve` prints;
- `jobs`: jobs a daemon runs (submit, watch, get, list, cancel);
- the `patience-py` command (`python -m patience.remote`): `solve_file` as a program.

    from patience.remote import solve_file

    for answer in solve_file("deals.in", ["http://127.0.0.1:50051"], deadline=60):
        print(answer.text())   # what `patience solve` prints for this deal

The gRPC messages are made from the API's descriptors the wheel carries (`patience.remote.proto`).
"""

from .client import DEFAULT_ADDR, Answer, RpcFailure, solve_file
from .deals import Deal, DealFileError, read_deals
from .table import Remote

__all__ = ["DEFAULT_ADDR", "Answer", "Deal", "DealFileError", "Remote", "RpcFailure", "read_deals",
           "solve_file"]
