//! Reading deals from UVa-format files, one at a time, in constant memory.
//!
//! # Framing, and how a bad deal is contained
//! Blank lines (and lines of only whitespace) are skipped wherever they appear, so files with blank
//! lines between deals or between piles read the same as the judge's format. A deal then starts at
//! the next non-blank line and is either
//! - that one line, when it holds exactly 36 tokens (the one-line form the gRPC API uses),
//! - that one line, when it holds two or more `/`: a mid-game position, nine `/`-separated piles
//!   (a single `/` is taken for a typo in a pile line, which costs only its deal), or
//! - that line and the next eight non-blank lines, one pile each.
//!
//! The reader frames deals by lines, never by counting cards across lines. A pile line with a bad
//! token, or with three or five cards, is still one pile line: the deal it belongs to is reported
//! bad and the next deal starts exactly where it would have. A typo therefore costs its own deal
//! only. What lines cannot recover from is a *missing or extra line*; that shifts the framing of
//! the deals that follow, so they are reported bad too (usually as duplicate cards) rather than
//! silently answered for a deal that nobody wrote.

use std::io::{self, BufRead};

use crate::lines::Lines;

use super::{CARDS, Card, Deal, DealBuilder, DealError, PILE_HEIGHT, PILES};

/// A deal that could not be read, with where it is in the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("deal {deal} (line {line}): {error}")]
pub struct BadDeal {
    /// 1-based number of the deal in the file.
    pub deal: u64,
    /// 1-based line where the problem was found.
    pub line: u64,
    pub error: DealError,
}

/// Why the reader could not produce a deal.
#[derive(Debug, thiserror::Error)]
pub enum DealFileError {
    /// This deal is bad; the reader has moved past it and can go on.
    #[error(transparent)]
    Deal(#[from] BadDeal),
    /// The input itself failed; nothing more can be read. Its message is the cause's, so it is
    /// not also the error's source (which would print it twice).
    #[error("read failed: {0}")]
    Io(io::Error),
}

impl From<io::Error> for DealFileError {
    fn from(e: io::Error) -> Self {
        DealFileError::Io(e)
    }
}

/// Iterates over the deals of a UVa-format input. Holds one line at a time.
#[derive(Debug)]
pub struct DealReader<R> {
    lines: Lines<R>,
    deal_no: u64,
    failed: bool,
}

impl<R: BufRead> DealReader<R> {
    pub fn new(input: R) -> Self {
        DealReader::resumed(input, 0, 0)
    }

    /// A reader of an input that stands at the start of a line, `line` lines and `deals` deals
    /// into its file (a shard's first deal, found by [`super::frame`]): it numbers deals and lines
    /// on from there.
    pub fn resumed(input: R, line: u64, deals: u64) -> Self {
        DealReader {
            lines: Lines::resumed(input, line),
            deal_no: deals,
            failed: false,
        }
    }

    /// The underlying input, for example to see whether it has more data buffered.
    pub fn get_ref(&self) -> &R {
        self.lines.get_ref()
    }

    fn read_deal(&mut self) -> Result<Option<Deal>, DealFileError> {
        // Nearly every deal of a file is in the judge's own layout: take it whole when it is.
        if let Some(deal) = self
            .lines
            .take_block(JUDGE_DEAL_BYTES, PILES as u64, judge_layout)?
        {
            self.deal_no += 1;
            return Ok(Some(deal));
        }
        if !self.lines.advance()? {
            return Ok(None);
        }
        self.deal_no += 1;
        let deal = self.deal_no;
        let first_line = self.lines.number();
        let bad = |line, error| DealFileError::Deal(BadDeal { deal, line, error });

        // A position has eight slashes; one stray slash in a pile line must not turn that line
        // into a position and shift the framing of the eight pile lines after it.
        let slashes = self.lines.line().iter().filter(|&&b| b == b'/').count();
        if slashes >= 2 || count_tokens(self.lines.line()) == CARDS {
            let text = String::from_utf8_lossy(self.lines.line()).into_owned();
            return Deal::parse(&text).map(Some).map_err(|e| bad(first_line, e));
        }

        // Nine pile lines. Every one is consumed even after an error, to keep the framing.
        let mut pile_lines = [first_line; PILES];
        let mut builder = DealBuilder::default();
        let mut first_error: Option<(u64, DealError)> = None;
        for (pile, pile_line) in pile_lines.iter_mut().enumerate() {
            if pile > 0 {
                if !self.lines.advance()? {
                    // A problem found on an earlier line is reported where it is.
                    let (line, error) = first_error.unwrap_or((
                        self.lines.number(),
                        DealError::CardCount {
                            found: builder.count(),
                        },
                    ));
                    return Err(bad(line, error));
                }
                *pile_line = self.lines.number();
            }
            if first_error.is_some() {
                continue;
            }
            // Nearly every pile line is four well-formed cards: read those byte by byte. Anything
            // else takes the general path below, which names what is wrong.
            if let Some(cards) = four_cards(self.lines.line()) {
                for card in cards {
                    builder.push_card(card);
                }
                continue;
            }
            let found = count_tokens(self.lines.line());
            let slashes = self
                .lines
                .line()
                .split(|&b| is_space(b))
                .filter(|t| *t == b"/")
                .count();
            if slashes > 0 {
                first_error = Some((
                    self.lines.number(),
                    DealError::StraySlash {
                        pile: pile + 1,
                        found: found - slashes,
                    },
                ));
                continue;
            }
            if found != PILE_HEIGHT {
                first_error = Some((
                    self.lines.number(),
                    DealError::PileSize {
                        pile: pile + 1,
                        found,
                    },
                ));
                continue;
            }
            let text = String::from_utf8_lossy(self.lines.line());
            for token in text.split_whitespace() {
                if let Err(e) = builder.push(token) {
                    first_error = Some((self.lines.number(), e));
                    break;
                }
            }
        }
        if let Some((line, error)) = first_error {
            return Err(bad(line, error));
        }
        builder.finish().map(Some).map_err(|error| {
            let line = match &error {
                DealError::DuplicateCard { second, .. } => pile_lines[second.pile - 1],
                _ => first_line,
            };
            bad(line, error)
        })
    }
}

/// A deal in the judge's layout: nine lines of four cards, `AS 9S 6C KS` and a line feed each.
const JUDGE_DEAL_BYTES: usize = PILES * JUDGE_PILE_BYTES;
const JUDGE_PILE_BYTES: usize = 3 * PILE_HEIGHT;

/// The deal `block` holds when it is a valid deal in exactly the judge's layout (single spaces,
/// line feeds, no blank line); `None` for anything else, bad deals included, which the reader
/// then reads line by line to say what is wrong and where.
fn judge_layout(block: &[u8]) -> Option<Deal> {
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

impl<R: BufRead> Iterator for DealReader<R> {
    type Item = Result<Deal, DealFileError>;

    /// Yields deals in file order. After an I/O error it yields nothing more.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.read_deal() {
            Ok(deal) => deal.map(Ok),
            Err(e) => {
                self.failed = matches!(e, DealFileError::Io(_));
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "AS 9S 6C KS\nJC QH AC KH\n7S QD JD KD\nQS TS JS 9H\n6D TD AD 8S\n\
                          QC TH KC 8D\n8C 9D TC 7C\n9C 7H JH 7D\n8H 6S AH 6H\n";

    fn read(text: &str) -> Vec<Result<Deal, String>> {
        DealReader::new(text.as_bytes())
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
    }

    /// Rough edge 3: the typo is on line 4; the input ends on line 5.
    #[test]
    fn a_typo_in_an_incomplete_last_deal_is_reported_on_its_own_line() {
        let text = "KS QS JS TS\n9S 8S 7S 6S\nKC QC JC TC\n9X 8C 7C 6C\nKD QD JD TD\n";
        let got = read(text);
        assert_eq!(got.len(), 1);
        let error = got[0].as_ref().unwrap_err();
        assert!(
            error.starts_with("deal 1 (line 4): pile 4, position 1"),
            "{error}"
        );
    }

    /// Rough edge 4: a stray slash is named, and not counted as a card.
    #[test]
    fn a_lone_slash_in_a_pile_line_is_named_not_counted() {
        let text = SAMPLE.replacen("AS 9S 6C KS\n", "AS 9S 6C KS / JC QH AC KH\n", 1);
        let text = text.replacen("JC QH AC KH\n", "", 1);
        let got = read(&format!("{text}{SAMPLE}"));
        let error = got[0].as_ref().unwrap_err();
        assert!(
            error.starts_with("deal 1 (line 1): pile 1's line has a `/` beside 8 cards"),
            "{error}"
        );
        assert!(!error.contains("9 cards"), "{error}");
    }

    #[test]
    fn reads_consecutive_deals() {
        let got = read(&SAMPLE.repeat(3));
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|r| r.is_ok()));
    }

    /// Deals in the judge's layout are taken nine lines at once; the numbering of deals and lines
    /// after them is what reading line by line gives (counted by hand: deals 1-3 are lines 1-27,
    /// deal 4 lines 28-36, its fourth pile line 31).
    #[test]
    fn deals_taken_whole_leave_the_numbering_of_what_follows_as_it_was() {
        let typo = SAMPLE.replacen("QS TS JS 9H", "QS TS JS 9X", 1);
        let got = read(&format!("{SAMPLE}{SAMPLE}{SAMPLE}{typo}{SAMPLE}"));
        assert_eq!(got.len(), 5);
        assert!(got[..3].iter().chain(&got[4..]).all(Result::is_ok));
        let error = got[3].as_ref().unwrap_err();
        assert!(error.starts_with("deal 4 (line 31): pile 4"), "{error}");
        // A duplicate card in the judge's layout is found by the line-by-line reader, on the
        // line of its second copy (pile 2's first card is also pile 1's).
        let twice = SAMPLE.replacen("JC QH AC KH", "AS QH AC KH", 1);
        let got = read(&format!("{SAMPLE}{twice}"));
        let error = got[1].as_ref().unwrap_err();
        assert!(error.starts_with("deal 2 (line 11)"), "{error}");
    }

    /// The whole-deal reading and the line-by-line one agree, deal for deal and error for error:
    /// the same random deals and damaged ones in the judge's layout, and with every line ending
    /// in CRLF (which the whole-deal reading never takes).
    #[test]
    fn reading_whole_deals_agrees_with_reading_line_by_line() {
        let mut rng = fastrand::Rng::with_seed(34);
        let mut text = String::new();
        for i in 0..300 {
            let mut deal = Deal::shuffled(&mut rng).to_string();
            match i % 7 {
                // A repeated card, a bad card, a short pile, a blank line inside.
                1 => deal = deal.replacen(&deal[3..5].to_string(), &deal[0..2], 1),
                2 => deal.replace_range(6..8, "1S"),
                3 => deal.replace_range(9..11, "  "),
                4 => deal.insert(12, '\n'),
                _ => {}
            }
            text.push_str(&deal);
        }
        let whole = read(&text);
        let by_line = read(&text.replace('\n', "\r\n"));
        assert_eq!(whole.len(), by_line.len());
        assert!(whole.iter().filter(|r| r.is_err()).count() > 100);
        assert_eq!(whole, by_line);
    }

    #[test]
    fn tolerates_blank_lines_crlf_tabs_and_lower_case() {
        let messy = format!(
            "\n\n{}\n   \n{}",
            SAMPLE.replace('\n', "\r\n\r\n").replace(' ', "\t  "),
            SAMPLE.to_lowercase()
        );
        let plain = read(&SAMPLE.repeat(2));
        assert_eq!(read(&messy), plain);
    }

    #[test]
    fn reads_a_deal_written_on_one_line() {
        let one_line = SAMPLE.replace('\n', " ") + "\n" + SAMPLE;
        let got = read(&one_line);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], got[1]);
        assert!(got[0].is_ok());
    }

    #[test]
    fn reads_positions_one_per_line_between_deals() {
        let text = format!("{SAMPLE}7S 6S / 6C 6H / 7C 6D / / / / / /\n6S / 6C / 7S\n{SAMPLE}");
        let got = read(&text);
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got[0].is_ok() && got[3].is_ok());
        assert_eq!(got[1].as_ref().map(Deal::is_full), Ok(false));
        let err = got[2].as_ref().unwrap_err();
        assert!(
            err.starts_with("deal 3 (line 11): the position has 3 piles"),
            "{err}"
        );
    }

    #[test]
    fn a_stray_slash_in_a_pile_line_costs_only_its_deal() {
        let broken = SAMPLE.replacen("QS TS JS 9H", "QS TS/JS 9H", 1);
        let got = read(&format!("{SAMPLE}{broken}{SAMPLE}"));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].is_ok() && got[2].is_ok(), "{got:?}");
        assert!(got[1].is_err());
    }

    #[test]
    fn a_bad_pile_line_costs_only_its_deal() {
        let broken = SAMPLE.replacen("QS TS JS 9H", "QS TS JS", 1);
        let text = format!("{SAMPLE}{broken}{SAMPLE}");
        let got = read(&text);
        assert_eq!(got.len(), 3);
        assert!(got[0].is_ok() && got[2].is_ok());
        let err = got[1].as_ref().unwrap_err();
        assert_eq!(err, "deal 2 (line 13): pile 4 has 3 cards; a pile has 4");
    }

    #[test]
    fn a_bad_token_names_deal_line_pile_position_and_token() {
        let broken = SAMPLE.replacen("JD", "JX", 1);
        let got = read(&format!("{SAMPLE}\n{broken}"));
        let err = got[1].as_ref().unwrap_err();
        assert!(
            err.starts_with("deal 2 (line 13): pile 3, position 3: \"JX\""),
            "{err}"
        );
    }

    #[test]
    fn a_duplicate_points_at_the_line_of_its_second_copy() {
        let broken = SAMPLE.replacen("6H", "AS", 1);
        let got = read(&broken);
        let err = got[0].as_ref().unwrap_err();
        assert!(
            err.starts_with("deal 1 (line 9): AS appears twice"),
            "{err}"
        );
    }

    #[test]
    fn a_truncated_last_deal_is_reported() {
        let cut: String = SAMPLE.lines().take(5).map(|l| format!("{l}\n")).collect();
        let got = read(&format!("{SAMPLE}{cut}"));
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[1].as_ref().unwrap_err(),
            "deal 2 (line 14): the deal has 20 cards; a deal has 36 (9 piles of 4)"
        );
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_ignored() {
        let with_bom = format!("\u{feff}{SAMPLE}");
        assert_eq!(read(&with_bom), read(SAMPLE));
    }

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

    /// Rough edge 2: the cause is in the message, so it must not be the source as well.
    #[test]
    fn a_read_failure_says_its_cause_once() {
        use std::error::Error as _;
        let e = DealFileError::from(io::Error::other("the cable is cut"));
        assert_eq!(e.to_string(), "read failed: the cable is cut");
        assert!(e.source().is_none());
    }

    /// A file that is not text ends with one error, not one bad deal per line of it.
    #[test]
    fn invalid_utf8_ends_the_input_with_one_error() {
        let mut bytes = SAMPLE.as_bytes().to_vec();
        bytes[0] = 0xff;
        let got: Vec<_> = DealReader::new(&bytes[..]).collect();
        assert_eq!(got.len(), 1);
        assert!(
            matches!(&got[0], Err(DealFileError::Io(e)) if e.kind() == io::ErrorKind::InvalidData)
        );
    }
}
