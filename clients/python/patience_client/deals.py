"""Reading UVa deal files as `patience solve` reads them, so that deal N here is its deal N.

The daemon sees one deal at a time, as one line of 36 cards, and cannot tell how the file laid it
out. So the framing is the client's: which lines make a deal, that each pile line holds four
cards (joined, a pile of five and one of three would make a valid 36-card deal that `solve`
rejects), and the line `solve` names in an error. The cards themselves are the daemon's to judge;
a card is checked here only to know which line `solve` would name if the daemon finds it bad.
"""

import re
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
    lines = _lines(stream, name)
    number = 0
    for first, text in lines:
        if text is None:
            return
        number += 1
        tokens = _TOKEN.findall(text)
        if text.count("/") >= 2 or len(tokens) == CARDS:
            # One line: a deal, or a position with "/" between piles. Any error is on this line.
            yield Deal(number, cards=text.rstrip("\r\n"), line=first)
            continue
        yield _nine_lines(number, first, tokens, lines)


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
