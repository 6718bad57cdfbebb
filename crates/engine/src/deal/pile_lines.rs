//! What a deal's lines hold: a pile line's four cards, a deal or position written on one line, a
//! deal's nine pile lines, and a block of nine lines in the judge's own layout, read at once. The
//! reader (`reader.rs`) decides which lines make a step; this says what they hold, or what is
//! wrong with them and where.

use super::{CARDS, Card, Deal, DealBuilder, DealError, PILE_HEIGHT, PILES};

/// A deal that could not be read, with where it is in the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("deal {deal} (line {line}): {}", said(.error, *.line, .skipped))]
pub struct BadDeal {
    /// 1-based number of the deal in the file.
    pub deal: u64,
    /// 1-based line where the problem was found; a skipped run's first line.
    pub line: u64,
    pub error: DealError,
    /// Lines skipped to where whole deals begin again, when this step is not one deal's nine
    /// lines but a run that a missing, extra or stray line left between whole deals (see the
    /// module docs).
    pub skipped: Option<Skipped>,
}

/// A run of lines that is not a whole deal: from [`BadDeal::line`] to `last`, after which whole
/// deals begin again at line `next`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub last: u64,
    pub next: u64,
}

/// A bad deal's words: its error, or for a skipped run, the lines skipped and why.
fn said(error: &DealError, line: u64, skipped: &Option<Skipped>) -> String {
    match skipped {
        None => error.to_string(),
        Some(Skipped { last, next }) => {
            let lines = match *last == line {
                true => format!("line {line} does not read as a deal"),
                false => format!("lines {line}-{last} do not read as whole deals"),
            };
            format!(
                "{lines} (nine lines from line {line}: {error}); skipped, and whole deals begin \
                 again at line {next}"
            )
        }
    }
}

/// A deal or position written on one line, parsed, when `line` is one: two or more `/`, or 36
/// tokens; `None` for a pile line.
pub(super) fn one_line(line: &[u8]) -> Option<Result<Deal, DealError>> {
    let slashes = line.iter().filter(|&&b| b == b'/').count();
    (slashes >= 2 || count_tokens(line) == CARDS)
        .then(|| Deal::parse(&String::from_utf8_lossy(line)))
}

/// Deal number `deal` from its pile lines, in order; fewer than nine when the input ended after
/// them, at line `end`. Every line is looked at even after an error, so that the first error is
/// the one reported, where it is.
pub(super) fn piles<'a>(
    lines: impl Iterator<Item = (&'a [u8], u64)>,
    deal: u64,
    end: u64,
) -> Result<Deal, BadDeal> {
    let bad = |line, error| BadDeal {
        deal,
        line,
        error,
        skipped: None,
    };
    let mut pile_lines = [0u64; PILES];
    let mut builder = DealBuilder::default();
    let mut first_error: Option<(u64, DealError)> = None;
    let mut count = 0;
    for (pile, ((line, number), pile_line)) in lines.zip(pile_lines.iter_mut()).enumerate() {
        count += 1;
        *pile_line = number;
        if first_error.is_some() {
            continue;
        }
        // Nearly every pile line is four well-formed cards: read those byte by byte. Anything
        // else takes the general path below, which names what is wrong.
        if let Some(cards) = four_cards(line) {
            for card in cards {
                builder.push_card(card);
            }
            continue;
        }
        let found = count_tokens(line);
        let slashes = line.split(|&b| is_space(b)).filter(|t| *t == b"/").count();
        if slashes > 0 {
            first_error = Some((
                number,
                DealError::StraySlash {
                    pile: pile + 1,
                    found: found - slashes,
                },
            ));
            continue;
        }
        if found != PILE_HEIGHT {
            first_error = Some((
                number,
                DealError::PileSize {
                    pile: pile + 1,
                    found,
                },
            ));
            continue;
        }
        let text = String::from_utf8_lossy(line);
        for token in text.split_whitespace() {
            if let Err(e) = builder.push(token) {
                first_error = Some((number, e));
                break;
            }
        }
    }
    if count < PILES {
        // A problem found on an earlier line is reported where it is.
        let (line, error) = first_error.unwrap_or((
            end,
            DealError::CardCount {
                found: builder.count(),
            },
        ));
        return Err(bad(line, error));
    }
    if let Some((line, error)) = first_error {
        return Err(bad(line, error));
    }
    let first_line = pile_lines[0];
    builder.finish().map_err(|error| {
        let line = match &error {
            DealError::DuplicateCard { second, .. } => pile_lines[second.pile - 1],
            _ => first_line,
        };
        bad(line, error)
    })
}

/// A deal in the judge's layout: nine lines of four cards, `AS 9S 6C KS` and a line feed each.
pub(super) const JUDGE_DEAL_BYTES: usize = PILES * JUDGE_PILE_BYTES;
const JUDGE_PILE_BYTES: usize = 3 * PILE_HEIGHT;

/// The deal `block` holds when it is a valid deal in exactly the judge's layout (single spaces,
/// line feeds, no blank line); `None` for anything else, bad deals included, which the reader
/// then reads line by line to say what is wrong and where.
pub(super) fn judge_layout(block: &[u8]) -> Option<Deal> {
    let mut piles = [[Card::ALL[0]; PILE_HEIGHT]; PILES];
    for (pile, line) in piles.iter_mut().zip(block.chunks_exact(JUDGE_PILE_BYTES)) {
        let [a, b, b' ', c, d, b' ', e, f, b' ', g, h, b'\n'] = *line else {
            return None;
        };
        *pile = [
            Card::from_bytes(a, b)?,
            Card::from_bytes(c, d)?,
            Card::from_bytes(e, f)?,
            Card::from_bytes(g, h)?,
        ];
    }
    (block.len() == JUDGE_DEAL_BYTES).then_some(())?;
    Deal::new(piles).ok()
}

/// The whitespace `str::split_whitespace` splits ASCII text on (tab, line feed, vertical tab,
/// form feed, carriage return, space).
fn is_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ')
}

/// Tokens of a line, as `split_whitespace` counts them. Byte by byte for ASCII lines (nearly all
/// of them), which is several times faster than decoding characters.
pub(super) fn count_tokens(line: &[u8]) -> usize {
    if line.is_ascii() {
        line.split(|&b| is_space(b))
            .filter(|t| !t.is_empty())
            .count()
    } else {
        String::from_utf8_lossy(line).split_whitespace().count()
    }
}

/// The four cards of a pile line written the usual way (four two-character cards separated by
/// ASCII whitespace), or `None` for any other line.
fn four_cards(line: &[u8]) -> Option<[Card; PILE_HEIGHT]> {
    // The judge's own layout, `AS 9S 6C KS` and a line end, at fixed offsets.
    if let [a, b, s1, c, d, s2, e, f, s3, g, h, end @ ..] = line
        && is_space(*s1)
        && is_space(*s2)
        && is_space(*s3)
        && end.iter().all(|&x| is_space(x))
    {
        return Some([
            Card::from_bytes(*a, *b)?,
            Card::from_bytes(*c, *d)?,
            Card::from_bytes(*e, *f)?,
            Card::from_bytes(*g, *h)?,
        ]);
    }
    let mut cards = [Card::ALL[0]; PILE_HEIGHT];
    let mut n = 0;
    let mut rest = line;
    loop {
        while let [b, tail @ ..] = rest
            && is_space(*b)
        {
            rest = tail;
        }
        match rest {
            [] => break,
            [r, s, tail @ ..] if tail.first().is_none_or(|&b| is_space(b)) => {
                *cards.get_mut(n)? = Card::from_bytes(*r, *s)?;
                n += 1;
                rest = tail;
            }
            _ => return None,
        }
    }
    (n == PILE_HEIGHT).then_some(cards)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The byte-level fast path reads a pile line exactly as the general path would, or
        /// leaves it to the general path.
        #[test]
        fn the_fast_pile_reader_agrees_with_the_general_one(
            line in "[6-9TJQKAtjqkaSCDHscdhX \t\r\x0b\x0c/]{0,16}"
        ) {
            if let Some(cards) = four_cards(line.as_bytes()) {
                let general: Vec<Result<Card, ()>> =
                    line.split_whitespace().map(str::parse).collect();
                let cards: Vec<Result<Card, ()>> = cards.iter().copied().map(Ok).collect();
                proptest::prop_assert_eq!(general, cards);
            }
            proptest::prop_assert_eq!(count_tokens(line.as_bytes()), line.split_whitespace().count());
        }
    }

    #[test]
    fn the_judges_layout_takes_the_fast_path() {
        assert!(four_cards(b"AS 9S 6C KS\r\n").is_some());
        assert!(four_cards(b"  as\t9s 6c  ks ").is_some());
        assert!(four_cards(b"AS 9S 6C").is_none());
        assert!(four_cards(b"AS 9S 6C KS QH").is_none());
        assert!(four_cards(b"AS 9S 6X KS").is_none());
    }
}
