"""Reading UVa deal files as `patience solve` reads them, so that deal N here is its deal N.

The daemon sees one deal at a time, as one line of 36 cards, and cannot tell how the file laid it
out. So the framing is the client's: which lines make a deal, that each pile line holds four
cards (joined, a pile of five and one of three would make a valid 36-card deal that `solve`
rejects), and the line `solve` names in an error. The cards themselves are the daemon's to judge;
a card is checked here only to know which line `solve` would name if the daemon finds it bad,
and to find where whole deals begin again after nine lines that do not make one (a line missing,
extra or stray), by the rule of `solve`'s reader (crates/engine/src/deal/reader.rs, docs/solving.md).
"""

import re
from collections import deque
from dataclasses import dataclass
from typing import Iterator, Optional

PILES = 9
PILE_HEIGHT = 4
CARDS = PILES * PILE_HEIGHT
# Beyond this a line is not one of a deal file (Rust: lines::MAX_LINE_BYTES).
MAX_LINE_BYTES = 1 << 20

# What Rust's `split_whitespace` splits on (Unicode White_Space); Python's own `str.split()` also
# splits on U+001C..U+001F, and JavaScript's `\s` misses U+0085, so the set is spelled out.
_TOKEN = re.compile("[^\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
# A line of only these is blank (Rust: `u8::is_ascii_whitespace`, which leaves out U+000B).
_BLANK = re.compile("[ \t\n\x0c\r]*")
# A card: rank then suit, either case, exactly two characters.
_CARD = re.compile("[6789TJQKAtjqka][SCDHscdh]")


class DealFileError(Exception):
    """The input cannot be read as a deal file (it cannot be opened, or it is not text): what
    `solve` exits 2 for. Every deal before the failure was read."""


@dataclass
class Deal:
    """One deal of a file, as read.

    Either `cards` is the text to send, or `error` is `solve`'s message for a problem in the
    framing, which the daemon cannot see (then `line` is `solve`'s line for it).

    For cards sent, `line` is the line `solve` names if the deal turns out bad, and `expect` says
    for which error code that holds: None for a deal written on one line (its line, whatever the
    error), or "ERROR_CODE_BAD_CARD" / "ERROR_CODE_DUPLICATE_CARD" for a deal of nine pile lines in
    which the client found that problem (a problem it did not foresee has no line: the daemon
    answers for a deal, not for lines).
    """

    number: int
    cards: Optional[str] = None
    error: Optional[str] = None
    line: Optional[int] = None
    expect: Optional[str] = None
    # Lines skipped to where whole deals begin again: (first, last, next), when this step is not
    # one deal's nine lines but a run a missing, extra or stray line left (see `said`).
    skipped: Optional[tuple] = None

    def said(self, error, line):
        """`solve`'s message and line for this step, given the error found in its nine lines (the
        client's or the daemon's) and the line named for it."""
        if self.skipped is None:
            return error, line
        first, last, following = self.skipped
        lines = (f"line {first} does not read as a deal" if last == first
                 else f"lines {first}-{last} do not read as whole deals")
        return (f"{lines} (nine lines from line {first}: {error}); skipped, and whole deals begin"
                f" again at line {following}", first)


# How far past a damaged deal's first line whole deals are looked for (Rust: REALIGN_LINES), and
# the longest line looked at past its nine (HELD_LINE_BYTES, its line end included).
_REALIGN_LINES = 2 * PILES - 1 + PILES
_HELD_LINE_BYTES = 1024


def _plural(n):
    return "card" if n == 1 else "cards"


def _lines(stream, name):
    """(number, text) of each line that is not blank, numbered as an editor numbers them; then
    (number of the last line, None) at the end."""
    number = 0
    for raw in stream:
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise DealFileError(
                f"{name}: line {number} is longer than {MAX_LINE_BYTES} bytes: not a text file of deals"
            )
        if b"\0" in raw:
            raise DealFileError(f"{name}: line {number} is not text (a NUL byte): not a file of deals")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DealFileError(
                f"{name}: line {number} is not text (bytes that are not UTF-8): not a file of deals"
            ) from None
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        if not _BLANK.fullmatch(text):
            yield number, text
    yield number, None


def read_deals(stream, name) -> Iterator[Deal]:
    """The deals of a binary stream, in order; `name` is the file's name in error messages.
    Raises DealFileError where `solve` stops with exit status 2."""
    source = _lines(stream, name)
    held = deque()  # (number, text) of lines read ahead, not yet taken
    end = [None]  # the last line's number, once the input has ended

    def fill(n):
        while len(held) < n and end[0] is None:
            number, text = next(source)
            if text is None:
                end[0] = number
            else:
                held.append((number, text))
        return min(n, len(held))

    def take(n):
        for _ in range(min(n, len(held))):
            held.popleft()

    number = 0
    while fill(1):
        number += 1
        first, text = held[0]
        tokens = _TOKEN.findall(text)
        if _one_line(text):
            take(1)
            # One line: a deal, or a position with "/" between piles. Any error is on this line.
            yield Deal(number, cards=text.rstrip("\r\n"), line=first)
            continue
        count = fill(PILES)
        frame = list(held)[:count]
        lines = iter(frame[1:] + [(end[0], None)])
        deal = _nine_lines(number, first, tokens, lines)
        if count < PILES or _reads(frame):
            take(count)
            yield deal
            continue
        skip = _realign(held, fill)
        if skip is None:
            take(PILES)
        else:
            deal.skipped = (first, held[skip - 1][0], held[skip][0])
            take(skip)
        yield deal


def _one_line(text):
    """Whether a line is a step of its own: a deal or position written on one line."""
    return text.count("/") >= 2 or len(_TOKEN.findall(text)) == CARDS


def _pile_cards(text):
    """The cards of a pile line that holds four cards, upper case; None for any other line."""
    tokens = _TOKEN.findall(text)
    if len(tokens) != PILE_HEIGHT or not all(_CARD.fullmatch(t) for t in tokens):
        return None
    return [t.upper() for t in tokens]


def _reads(frame):
    """Whether nine pile lines make a deal: four cards each, 36 different."""
    piles = [_pile_cards(text) for _, text in frame]
    return all(p is not None for p in piles) and len({c for p in piles for c in p}) == CARDS


def _framed(frame):
    """Whether nine lines look framed where they are: they make a deal, or fail on a line of
    their own (not four cards) rather than as a deck with a card twice."""
    return _reads(frame) or any(_pile_cards(text) is None for _, text in frame)


def _realign(held, fill):
    """After nine lines that do not make a deal, where whole deals begin again: None when the
    next nine look framed (or none reads within the look-ahead), else the lines to skip."""
    fill(_REALIGN_LINES)
    window = min(_REALIGN_LINES, next(
        (i for i in range(PILES, len(held)) if len(held[i][1].encode()) > _HELD_LINE_BYTES),
        len(held)))
    lines = list(held)[:window]

    def nine(at):
        return lines[at:at + PILES] if at + PILES <= window else None

    following = nine(PILES)
    if PILES < window and (_one_line(lines[PILES][1]) or (following and _framed(following))):
        return None
    for skip in [*range(1, PILES), *range(PILES + 1, 2 * PILES)]:
        if skip < window and not _one_line(lines[skip][1]) and nine(skip) and _reads(nine(skip)):
            return skip
    return None


def _nine_lines(number, first, tokens, lines):
    """A deal of nine pile lines, the first already read. Every line is consumed, even after a
    problem, so the next deal starts where `solve`'s does."""
    piles, pile_lines = [], []
    problem = None  # (line, message) of the first problem in the framing
    bad_card_line = None  # the first pile line with a token that is not a card
    at = first
    for pile in range(1, PILES + 1):
        if pile > 1:
            at, text = next(lines)
            if text is None:
                if problem:
                    return Deal(number, error=problem[1], line=problem[0])
                if bad_card_line is not None:
                    break  # the daemon finds the bad card before it counts cards, as `solve` does
                found = sum(len(p) for p in piles)
                message = f"the deal has {found} {_plural(found)}; a deal has 36 (9 piles of 4)"
                return Deal(number, error=message, line=at)
            tokens = _TOKEN.findall(text)
        piles.append(tokens)
        pile_lines.append(at)
        if problem or bad_card_line is not None:
            continue
        slashes = tokens.count("/")
        found = len(tokens) - slashes
        if slashes:
            problem = (at, f"pile {pile}'s line has a `/` beside {found} {_plural(found)}; a slash"
                           f" separates piles only in a one-line position (nine piles, eight slashes)")
        elif found != PILE_HEIGHT:
            problem = (at, f"pile {pile} has {found} {_plural(found)}; a pile has 4")
        elif not all(_CARD.fullmatch(t) for t in tokens):
            bad_card_line = at
    if problem:
        return Deal(number, error=problem[1], line=problem[0])
    cards = " ".join(" ".join(p) for p in piles)
    if bad_card_line is not None:
        return Deal(number, cards=cards, line=bad_card_line, expect="ERROR_CODE_BAD_CARD")
    line = _duplicate_line(piles, pile_lines)
    return Deal(number, cards=cards, line=line, expect=line and "ERROR_CODE_DUPLICATE_CARD")


def _duplicate_line(piles, pile_lines):
    """The line of the pile where a card is met the second time, reading the piles in order (the
    line `solve` names for a duplicate); None when no card is."""
    seen = set()
    for pile, line in zip(piles, pile_lines):
        for card in pile:
            if card.upper() in seen:
                return line
            seen.add(card.upper())
    return None
