"""`solve_file`: deal files streamed through `patience.v1.Solver/SolveStream`, the answers in order;
and `answers`, the same stream for any items (`patience.remote.Remote` sends a table's rows).

What a caller would otherwise write around the stubs: addresses with or without TLS, a bearer
token, a deadline for the whole run, gzip, and failover. A call that fails with a status worth
retrying elsewhere (the daemon is down, draining or cut its stream, or refused the call for load)
goes on at the next address, resending the deals that got no Result: the Results before the index
the daemon names in its `resume_index` detail were received, in order, and nothing is printed
twice or lost. Which statuses those are is decided from the `ErrorInfo` reason in the status
details (`google.rpc.Status` in `grpc-status-details-bin`), never from the message text.
"""

import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence, Union

import grpc
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2

from . import proto as _proto
from .deals import DealFileError, read_deals

DEFAULT_ADDR = "http://127.0.0.1:50051"
DOMAIN = "patience.v1"
# Refusals for load: another replica (or the same one later) may take the call.
LOAD_REASONS = {"MAX_OPEN_STREAMS", "MAX_DEALS_IN_FLIGHT", "STALL_TIMEOUT"}
# Rounds over every address, each call failing without an answer, before the run gives up.
ROUNDS = 2


@dataclass
class Answer:
    """One deal's answer: a probability, or why the deal has none."""

    file: str
    deal: int
    probability: Optional[float] = None
    error: Optional[str] = None
    # The line `patience solve` names for the error, when the client knows it (see deals.Deal).
    error_line: Optional[int] = None

    def text(self, precision: int = 6) -> str:
        """The line `patience solve` prints for this deal. Python's `f` format rounds the double's
        exact binary value half to even, as Rust's and C's do."""
        if self.error is None:
            return f"{self.probability:.{precision}f}"
        # Standard input is named by nothing, as `solve` names it.
        name = "" if self.file == "-" else f"{self.file}: "
        where = f" (line {self.error_line})" if self.error_line is not None else ""
        return f"error: {name}deal {self.deal}{where}: {self.error}"


class RpcFailure(Exception):
    """A call that ended with an error status: where, its code, the `ErrorInfo` reason and
    metadata when the daemon sent details, the message, and the `RetryInfo` delay if any."""

    def __init__(self, addr, code, message, reason=None, metadata=None, retry_delay=None):
        super().__init__(message)
        self.addr = addr
        self.code = code
        self.message = message
        self.reason = reason
        self.metadata = metadata or {}
        self.retry_delay = retry_delay

    @classmethod
    def from_error(cls, addr, error):
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        message = (error.details() if hasattr(error, "details") else None) or str(error)
        reason, metadata, retry_delay = None, {}, None
        trailers = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
        for key, value in trailers or ():
            if key != "grpc-status-details-bin":
                continue
            try:
                for detail in status_pb2.Status.FromString(value).details:
                    if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                        info = error_details_pb2.ErrorInfo()
                        detail.Unpack(info)
                        if info.domain == DOMAIN:
                            reason, metadata = info.reason, dict(info.metadata)
                    elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                        retry = error_details_pb2.RetryInfo()
                        detail.Unpack(retry)
                        retry_delay = retry.retry_delay.ToTimedelta().total_seconds()
            except DecodeError:
                pass  # details that do not decode say nothing more: the code and message remain
        return cls(addr, code, message, reason, metadata, retry_delay)

    @property
    def retryable(self):
        """Whether another address (or this one later) may take the rest of the deals."""
        if self.code == grpc.StatusCode.UNAVAILABLE:
            return True
        return self.code == grpc.StatusCode.RESOURCE_EXHAUSTED and self.reason in LOAD_REASONS

    def __str__(self):
        reason = f" ({self.reason})" if self.reason else ""
        return f"{self.addr}: {self.code.name}{reason}: {self.message}"


class _Outbox:
    """The items read and not yet answered, shared by the request iterator (grpc's thread) and
    the reader of answers. A new call resends them from the first, then reads on."""

    def __init__(self, items):
        self._items = iter(items)
        # `_state` guards pending and answered, and is never held while a file is read: reading
        # standard input can wait for the user, and answers must not wait with it. `_reading`
        # lets one thread read at a time, so deals enter `pending` in file order.
        self._state = threading.Lock()
        self._reading = threading.Lock()
        self.pending = deque()  # items sent or about to be, without an answer
        self.answered = 0  # items answered so far, over the whole run
        self.read_error = None
        self.exhausted = False

    def _next_item(self):
        """The next item, or None at the end (or at an input that cannot be read, kept in
        read_error)."""
        if self.exhausted:
            return None
        try:
            item = next(self._items, None)
        except DealFileError as e:
            self.read_error, item = e, None
        self.exhausted = item is None
        return item

    def _at(self, position):
        """(found, item): the pending deal at `position`, or whether there is nothing to read."""
        offset = position - self.answered
        if offset < 0:
            return True, None  # the iterator of a call that ended and was resent
        if offset < len(self.pending):
            return True, self.pending[offset]
        return self.exhausted, None

    def take(self, position):
        """The deal at `position` of the run (a count over the whole run, deals the framing found
        bad included): a pending one, or the next one read; None when there is no more."""
        with self._state:
            found, item = self._at(position)
        if found:
            return item
        with self._reading:
            with self._state:
                found, item = self._at(position)
            if found:
                return item
            # Nothing pending at `position`, so the next item read is the one at `position`.
            item = self._next_item()
            with self._state:
                if item is not None:
                    self.pending.append(item)
            return item

    def answer(self):
        """The oldest pending deal, now answered."""
        with self._state:
            self.answered += 1
            return self.pending.popleft()

    def done(self):
        with self._state:
            return self.exhausted and not self.pending


def _file_items(paths):
    """(file, Deal) for each deal of the files in order; DealFileError at one that cannot be
    read, after its deals before the failure."""
    for path in paths:
        try:
            yield from ((path, deal) for deal in _read(path))
        except OSError as e:
            raise DealFileError(f"{path}: read failed: {e.strerror}") from None


def _read(path):
    """The deals of one file ("-": standard input), the file closed at the end."""
    if path == "-":
        yield from read_deals(sys.stdin.buffer, "-")
        return
    try:
        stream = open(path, "rb")
    except OSError as e:
        raise DealFileError(f"cannot open {path}: {e.strerror}") from None
    with stream:
        yield from read_deals(stream, path)


def _channel(addr, tls_ca, tls_cert, tls_key, gzip):
    """A channel to `addr` (http://, https:// or HOST:PORT, which is TLS when a CA is given)."""
    target, secure = addr, tls_ca is not None
    for scheme, is_tls in (("http://", False), ("https://", True)):
        if addr.startswith(scheme):
            target, secure = addr[len(scheme):], is_tls
    compression = grpc.Compression.Gzip if gzip else grpc.Compression.NoCompression
    # No client-side message limit: a response is one Result per deal of a request.
    options = [("grpc.max_receive_message_length", -1)]
    if not secure:
        return grpc.insecure_channel(target, options=options, compression=compression)

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    credentials = grpc.ssl_channel_credentials(
        root_certificates=read(tls_ca) if tls_ca else None,
        private_key=read(tls_key) if tls_key else None,
        certificate_chain=read(tls_cert) if tls_cert else None,
    )
    return grpc.secure_channel(target, credentials, options=options, compression=compression)


@dataclass(frozen=True)
class Wire:
    """One game's stream on the wire: its service and method, the request for a batch of
    payloads, and each item's payload (None for an item answered where it was read)."""

    service: str
    method: str
    request: Callable[[list], object]
    payload: Callable[[object], object]


def _deal_request(cards, exact=False):
    proto = _proto.patience
    analysis = proto.AnalysisOptions(exact=True) if exact else None
    return proto.SolveRequest(deals=[proto.Deal(cards=c) for c in cards], analysis=analysis)


def _case_request(cases):
    proto = _proto.patience

    def gestures(triple):
        rock, paper, scissors = triple
        return proto.Gestures(rock=rock, paper=paper, scissors=scissors)

    return proto.SolveRpsStreamRequest(
        cases=[proto.RpsCase(maze=gestures(maze), others=[gestures(o) for o in others])
               for maze, others in cases])


#: A deal file's deals: `(file, Deal)` items, sent as their cards.
FILE_DEALS = Wire("Solver", "SolveStream", _deal_request, lambda item: item[1].cards)


def solve_file(
    paths: Union[str, Sequence[str]],
    addrs: Union[str, Sequence[str]] = DEFAULT_ADDR,
    *,
    token: Optional[str] = None,
    tls_ca: Optional[str] = None,
    tls_cert: Optional[str] = None,
    tls_key: Optional[str] = None,
    deadline: Optional[float] = None,
    batch: int = 256,
    gzip: bool = True,
    on_failover=None,
) -> Iterator[Answer]:
    """Yields an Answer per deal of the files (a path, or a list; "-" is standard input), in
    order, solved by the daemons at `addrs` (tried in turn).

    `token`: sent as `authorization: Bearer <token>`. `tls_ca` (and `tls_cert`/`tls_key` for
    mutual TLS): PEM files. `deadline`: seconds for the whole run. `gzip`: compress requests (the
    daemon compresses its answers for clients that accept gzip, as this one does).
    `on_failover(failure, next_addr)` is called before a failed call goes on at the next address.

    After a status worth retrying (UNAVAILABLE, or a refusal for load) the deals without a Result
    are resent to the next address; after a whole round of addresses failing without an answer,
    it waits the daemon's RetryInfo delay (if any) before the next round. Raises RpcFailure when
    the run cannot go on (a status not worth retrying, or two rounds without an answer; one if no
    daemon has answered yet in this run), and DealFileError when a file cannot be read; in both
    cases after yielding every answer received before.
    """
    paths = [paths] if isinstance(paths, str) else list(paths)
    return answers(_file_items(paths), addrs, FILE_DEALS, _answer, local=_local_answer,
                   token=token, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key,
                   deadline=deadline, batch=batch, gzip=gzip, on_failover=on_failover)


def answers(items, addrs, wire, answer, *, local=None, token=None, tls_ca=None, tls_cert=None,
            tls_key=None, deadline=None, batch=256, gzip=True, on_failover=None, channels=None):
    """Yields `answer(item, result)` for each of `items` in order (or `local(item)` for one whose
    payload is None), the items streamed through `wire` to the daemons at `addrs`, with the
    failover `solve_file` describes. `channels`, when given, is the caller's cache of channels
    by address (kept open after the run); otherwise they are made and closed here."""
    addrs = [addrs] if isinstance(addrs, str) else list(addrs)
    if not addrs:
        raise ValueError("no address given")
    metadata = (("authorization", f"Bearer {token}"),) if token is not None else None
    deadline_at = time.monotonic() + deadline if deadline is not None else None
    outbox = _Outbox(items)
    owned = channels is None
    channels = {} if owned else channels
    turn, failed_in_a_row, ever_answered = 0, 0, False
    try:
        while True:
            # Items answered where they were read are answered here, in their place.
            yield from _local_answers(outbox, wire, local)
            if outbox.done():
                break
            addr = addrs[turn % len(addrs)]
            if addr not in channels:
                channels[addr] = _channel(addr, tls_ca, tls_cert, tls_key, gzip)
            stream = _proto.method(channels[addr], wire.service, wire.method)
            timeout = None if deadline_at is None else deadline_at - time.monotonic()
            if timeout is not None and timeout <= 0:
                # No call is started once the run's time is up: a call with no time left races
                # its own deadline against whatever the daemon answers first.
                raise RpcFailure(addr, grpc.StatusCode.DEADLINE_EXCEEDED,
                                 "the run's deadline passed before a call could start")
            start = outbox.answered
            received = 0
            try:
                call = stream(_requests(outbox, wire, start, batch), timeout=timeout,
                              metadata=metadata)
                for response in call:
                    for result in response.results:
                        if result.index != received:
                            raise RpcFailure(addr, grpc.StatusCode.INTERNAL,
                                             f"result {result.index} came where {received} was due")
                        received += 1
                        yield from _local_answers(outbox, wire, local)
                        yield answer(outbox.answer(), result)
                        yield from _local_answers(outbox, wire, local)
            except grpc.RpcError as e:
                failure = RpcFailure.from_error(addr, e)
                failed_in_a_row = 0 if received else failed_in_a_row + 1
                ever_answered = ever_answered or received > 0
                # A run that no daemon ever answered stops after one round: a wrong address or a
                # daemon not started is not worth waiting for.
                rounds = ROUNDS if ever_answered else 1
                if not failure.retryable or failed_in_a_row >= rounds * len(addrs):
                    raise failure from None
                turn += 1
                if on_failover is not None:
                    on_failover(failure, addrs[turn % len(addrs)])
                if failed_in_a_row >= len(addrs) and turn % len(addrs) == 0:
                    # A whole round without an answer: wait as the daemon asked before the next.
                    _wait(failure.retry_delay or 0.0, deadline_at)
        if outbox.read_error is not None:
            raise outbox.read_error
    finally:
        if owned:
            for channel in channels.values():
                channel.close()


def _wait(seconds, deadline_at):
    if deadline_at is not None:
        seconds = min(seconds, max(0.0, deadline_at - time.monotonic()))
    time.sleep(seconds)


def _local_answers(outbox, wire, local):
    """Answers for the items at the head of the outbox that have no payload to send."""
    while outbox.pending and wire.payload(outbox.pending[0]) is None:
        yield local(outbox.answer())


def _local_answer(item):
    """A deal the framing found bad, answered in `solve`'s words."""
    file, deal = item
    error, line = deal.said(deal.error, deal.line)
    return Answer(file, deal.number, error=error, error_line=line)


def _requests(outbox, wire, start, batch):
    """Requests of up to `batch` payloads, from the item at `start` of the run on."""
    position, payloads = start, []
    while True:
        item = outbox.take(position)
        if item is None:
            break
        position += 1
        payload = wire.payload(item)
        if payload is None:
            continue
        payloads.append(payload)
        if len(payloads) == batch:
            yield wire.request(payloads)
            payloads = []
    if payloads:
        yield wire.request(payloads)


def _answer(item, result):
    file, deal = item
    if result.WhichOneof("outcome") == "probability":
        return Answer(file, deal.number, probability=result.probability)
    code = _proto.patience.ErrorCode.Name(result.error.code)
    line = deal.line if deal.expect is None or deal.expect == code else None
    error, line = deal.said(result.error.message, line)
    return Answer(file, deal.number, error=error, error_line=line)
