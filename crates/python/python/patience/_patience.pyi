"""Types of the native module; ``patience`` re-exports them."""

from typing import Any, Literal, Optional, Protocol, Sequence, Union

class _ArrowStream(Protocol):
    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...

class _ArrowArray(Protocol):
    def __arrow_c_array__(self, requested_schema: Optional[object] = None) -> "tuple[object, object]": ...

#: What ``solve`` reads: an Arrow table or array through the PyCapsule interface, or strings
#: (``None`` in a sequence is a bad row, as a null cell is).
Data = Union[_ArrowStream, _ArrowArray, Sequence[Optional[str]]]

class Answers:
    """One row per input row, in input order: ``index`` (uint64, the row's position from 0),
    ``id`` (the input's ``id`` column, as it was, when it has one), ``probability`` (float64,
    null for a bad row), ``error`` (utf8, null for a good row: what ``patience solve`` says of
    the same row of a Parquet input) and, when ``exact=True``, ``exact`` (the probability as a
    fraction in lowest terms, ``"n/d"``). Read it with any Arrow library:
    ``pyarrow.table(answers)``, ``polars.DataFrame(answers)``; or ``to_pydict()``."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    def __len__(self) -> int: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def column_names(self) -> "list[str]": ...
    def to_pydict(self) -> "dict[str, list[Any]]": ...

def solve(
    data: Data,
    column: str = "deal",
    *,
    game: Literal["deals", "rps"] = "deals",
    threads: Optional[int] = None,
    exact: bool = False,
) -> Answers:
    """Solves every row of ``data``'s string column ``column`` (a deal's 36 cards in one string,
    bottom to top pile by pile, or a position ``"7S 6S / 6C 6H / / ..."``; with ``game="rps"``
    an FZU 2145 case, its lines as a case file holds them), on ``threads`` threads (default: one
    per core), with the GIL released. Raises only for an input that cannot be read at all (no
    such column, not strings, not a table or sequence) or bad arguments."""

class Solver:
    """The engines' tables (megabytes each) kept between calls. Pickles as ``Solver(threads)``;
    the tables are made again where it is unpickled."""

    def __init__(self, threads: Optional[int] = None) -> None: ...
    @property
    def threads(self) -> Optional[int]: ...
    def solve(
        self,
        data: Data,
        column: str = "deal",
        *,
        game: Literal["deals", "rps"] = "deals",
        threads: Optional[int] = None,
        exact: bool = False,
    ) -> Answers:
        """As ``patience.solve``; ``threads`` defaults to the solver's."""

#: The gRPC API this build speaks, an encoded ``FileDescriptorSet`` (``patience.remote`` makes its
#: messages from it).
DESCRIPTORS: bytes

class Outgoing:
    """Rows waiting for a daemon's answers (``patience.remote``): ``finish`` makes the table."""

    def __len__(self) -> int: ...
    def finish(
        self,
        probabilities: "list[Optional[float]]",
        errors: "list[Optional[str]]",
        exact: "Optional[list[Optional[str]]]" = None,
    ) -> Answers: ...

def outgoing(
    data: Data, column: str = "deal", *, game: Literal["deals", "rps"] = "deals", exact: bool = False
) -> "tuple[Outgoing, list[Any]]":
    """The rows of ``data`` as ``solve`` reads them: the record, and the payloads to send (a
    deal's text, or a case's ``((r, p, s), [(r, p, s), ...])``) for the rows that can go."""
