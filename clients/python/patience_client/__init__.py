"""A client of the patience daemon (`patience serve`): deal files in, `patience solve`'s lines out.

    from patience_client import solve_file

    for answer in solve_file("deals.in", ["http://127.0.0.1:50051"], deadline=60):
        print(answer.text())   # what `patience solve` prints for this deal

The stubs (`patience_client.patience_pb2`, `patience_client.patience_pb2_grpc`) are generated
from the repository's proto/ when the package is built.
"""

from .client import DEFAULT_ADDR, Answer, RpcFailure, solve_file
from .deals import Deal, DealFileError, read_deals

__all__ = ["DEFAULT_ADDR", "Answer", "Deal", "DealFileError", "RpcFailure", "read_deals", "solve_file"]
