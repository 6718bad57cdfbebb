"""Stream UVa deal files to a patience daemon and print one probability per deal, like
`patience solve`.

    python -m venv .venv && .venv/bin/pip install -r requirements.txt
    .venv/bin/python -m grpc_tools.protoc -I ../../proto --python_out=gen --grpc_python_out=gen \
        patience/v1/patience.proto
    .venv/bin/python patience_client.py --addr 127.0.0.1:50051 deals.in
"""

import argparse
import os
import sys
from collections import deque
from pathlib import Path

# The stubs generated as above, in gen/ beside this file; or where PATIENCE_STUBS says (check.sh
# generates them in a temporary directory, to leave the checkout as it found it).
sys.path.insert(0, os.environ.get("PATIENCE_STUBS") or str(Path(__file__).parent / "gen"))

import grpc  # noqa: E402
from patience.v1 import patience_pb2, patience_pb2_grpc  # noqa: E402


def read_deals(path):
    """Yields each deal's 36 cards as one string: nine non-blank pile lines, or one line of 36."""
    pending = []
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            tokens = line.split()
            if not tokens:
                continue
            if not pending and len(tokens) == 36:
                yield " ".join(tokens)
                continue
            pending.append(" ".join(tokens))
            if len(pending) == 9:
                yield " ".join(pending)
                pending = []
    if pending:
        yield " ".join(pending)  # an incomplete last deal: the server says what is wrong


def requests(paths, batch, sent):
    """Yields SolveRequests of `batch` deals; appends each deal's (file, number in file) to `sent`."""
    deals = []
    for path in paths:
        for number, cards in enumerate(read_deals(path), 1):
            sent.append((path, number))
            deals.append(patience_pb2.Deal(cards=cards))
            if len(deals) == batch:
                yield patience_pb2.SolveRequest(deals=deals)
                deals = []
    if deals:
        yield patience_pb2.SolveRequest(deals=deals)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:50051")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--precision", type=int, default=6)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()

    status = 0
    # Results come back in the order deals were sent: the oldest entry names the next result's deal.
    sent = deque()
    with grpc.insecure_channel(args.addr) as channel:
        solver = patience_pb2_grpc.SolverStub(channel)
        for response in solver.SolveStream(requests(args.files, args.batch, sent)):
            for result in response.results:
                path, number = sent.popleft()
                if result.WhichOneof("outcome") == "probability":
                    print(f"{result.probability:.{args.precision}f}")
                else:
                    # Like `patience solve`'s line, without its "(line N)"; the message is the
                    # server's, which counts cards where `solve` names the pile that is short.
                    print(f"error: {path}: deal {number}: {result.error.message}")
                    status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
