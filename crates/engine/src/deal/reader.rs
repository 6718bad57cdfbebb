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
//! only.
//!
//! # A missing, extra or stray line
//! A missing or extra line would shift the framing of every deal after it. So when nine pile
//! lines do not make a deal, the reader looks at the lines after them (at most 26 from the first,
//! none longer than 1 KiB) for where whole deals begin again, and takes the first of:
//! - the next nine lines look framed (they read as a deal, or fail on a line of their own, such
//!   as a typo, rather than as a deck with a card twice, which is what nine good pile lines from
//!   two deals make; or the next line is a one-line step): the damage was inside this deal (a
//!   typo, a card twice), which is one bad deal, as above;
//! - nine pile lines make a deal from 1 to 8 lines on (lines missing, or stray lines before a
//!   deal), or from 10 to 17 lines on (lines extra): the lines before them are one bad step, an
//!   `error:` line that names them, and reading goes on from that deal;
//! - neither: the nine lines are one bad deal, and the next begins after them.
//!
//! So a missing, extra or stray line costs at most the deals it touches (one, or two when it
//! falls where one deal ends and the next begins), and every deal after is read as in the file
//! without it. The rule looks only forward, at the file's bytes, so a reader started at any
//! step's mark (a shard, an index) reads on exactly as one that read everything before it, and
//! framing (`super::frame`) is this reader. A file whose deals all read is read nine lines a
//! deal, as ever: the look-ahead happens only after a deal that does not read.
//!
//! An input fed by a writer who may wait for the answers before writing more (standard input, a
//! pipe, a FIFO: [`DealReader::fed_by_a_writer`]) is looked ahead of only as far as it has lines
//! at hand: a person who types a damaged deal gets its `error:` line at once. There the rule
//! sees fewer lines when the writer pauses right after the damage, which can cost one deal more.

use std::collections::VecDeque;
use std::io::{self, BufRead};

use crate::lines::Lines;
use crate::mark::Mark;

pub use super::pile_lines::{BadDeal, Skipped};
use super::pile_lines::{JUDGE_DEAL_BYTES, judge_layout, one_line, piles};
use super::{Deal, DealError, PILES};

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

/// A non-blank line read ahead of the deal being read: the lines a damaged deal is looked past
/// with, to find where whole deals begin again.
#[derive(Debug, Default)]
struct AheadLine {
    text: Vec<u8>,
    /// Its 1-based line number, and where it starts in bytes from the reader's start.
    number: u64,
    start: u64,
}

/// How far past a damaged deal's first line the reader looks for where whole deals begin again:
/// a deal that starts up to eight lines sooner (lines missing) or later (lines extra), and the
/// nine lines of that deal.
const REALIGN_LINES: usize = 2 * PILES - 1 + PILES;

/// The longest line read ahead past a damaged deal's nine: a pile line is four cards and some
/// whitespace. A longer line ends the look-ahead (it is read in its turn), so a reader holds at
/// most the nine lines of the deal it reads (each at most `MAX_LINE_BYTES`, as `Lines` holds one)
/// and 17 lines of at most 1 KiB, whatever the file holds.
const HELD_LINE_BYTES: usize = 1024;

/// Iterates over the deals of a UVa-format input. Holds one line at a time, and up to
/// `REALIGN_LINES` lines after a deal that does not read.
#[derive(Debug)]
pub struct DealReader<R> {
    lines: Lines<R>,
    deal_no: u64,
    failed: bool,
    /// Lines read and not yet taken by a step, in order.
    ahead: VecDeque<AheadLine>,
    /// Buffers of lines taken, for the next lines held (no allocation per line once warm).
    spare: Vec<Vec<u8>>,
    /// The input ended, or failed (why, and where), while lines were read ahead.
    ended: bool,
    broken: Option<(io::Error, u64, u64)>,
    /// `lines` stands on a line not yet held (reading ahead stopped at a long line).
    pending: bool,
    /// Where the reader started in its file, and the mark of the step read last.
    origin: Mark,
    mark: Mark,
    /// For an input fed by a writer who may wait for the answers (a person typing, a program
    /// streaming deal by deal): whether more lines are at hand without waiting on it. The
    /// look-ahead past a damaged deal stops where they are not.
    at_hand: Option<fn(&R) -> bool>,
}

impl<R: BufRead> DealReader<R> {
    pub fn new(input: R) -> Self {
        DealReader::at(input, &Mark::default())
    }

    /// A reader of an input that stands at `at` of its file, the start of a line (a shard's first
    /// deal, found by [`super::frame`]): it reads, numbers and marks steps on from there as one
    /// that read everything before would.
    pub fn at(input: R, at: &Mark) -> Self {
        DealReader {
            lines: Lines::resumed(input, at.line),
            deal_no: at.item,
            failed: false,
            ahead: VecDeque::new(),
            spare: Vec::new(),
            ended: false,
            broken: None,
            pending: false,
            origin: *at,
            mark: *at,
            at_hand: None,
        }
    }

    /// The same reader, for an input fed by a writer who may wait for the answers so far before
    /// writing more: the look-ahead past a damaged deal takes only the lines `at_hand` says are
    /// there without waiting (see the module docs), so a deal typed after a damaged one is never
    /// awaited before the damaged one is answered.
    pub fn fed_by_a_writer(mut self, at_hand: fn(&R) -> bool) -> Self {
        self.at_hand = Some(at_hand);
        self
    }

    /// The underlying input, for example to see whether it has more data buffered.
    pub fn get_ref(&self) -> &R {
        self.lines.get_ref()
    }

    /// Where the step read last begins: its first line (the failing line for a step where the
    /// input failed), and the deals and lines before it; the default for a file's first step.
    pub fn mark(&self) -> Mark {
        self.mark
    }

    /// Sets the mark of a step that is deal `self.deal_no + 1` and begins at line `number`, byte
    /// `start` of the reader's input.
    fn set_mark(&mut self, number: u64, start: u64) {
        self.mark = match self.deal_no {
            0 => Mark::default(),
            deals => Mark {
                offset: self.origin.offset + start,
                line: number - 1,
                item: deals,
                count: None,
            },
        };
    }

    /// Reads ahead until `n` lines are held or the input ends or fails; with `short`, also until
    /// a line longer than [`HELD_LINE_BYTES`] comes (it stays unread in `lines` for its turn).
    /// The lines held, at most `n`.
    fn fill(&mut self, n: usize, short: bool) -> usize {
        while self.ahead.len() < n && !self.ended && self.broken.is_none() {
            if !self.pending {
                if short
                    && self
                        .at_hand
                        .is_some_and(|at_hand| !at_hand(self.lines.get_ref()))
                {
                    break;
                }
                match self.lines.advance() {
                    Ok(true) => self.pending = true,
                    Ok(false) => self.ended = true,
                    Err(e) => self.broken = Some((e, self.lines.number(), self.lines.start())),
                }
                continue;
            }
            if short && self.lines.line().len() > HELD_LINE_BYTES {
                break;
            }
            let mut text = self.spare.pop().unwrap_or_default();
            text.clear();
            text.extend_from_slice(self.lines.line());
            self.ahead.push_back(AheadLine {
                text,
                number: self.lines.number(),
                start: self.lines.start(),
            });
            self.pending = false;
        }
        self.ahead.len().min(n)
    }

    /// Lets go of the first `n` lines held.
    fn take(&mut self, n: usize) {
        for held in self.ahead.drain(..n.min(self.ahead.len())) {
            self.spare.push(held.text);
        }
    }

    fn read_deal(&mut self) -> Result<Option<Deal>, DealFileError> {
        // Nearly every deal of a file is in the judge's own layout: take it whole when it is.
        if self.ahead.is_empty() && !self.pending && !self.ended && self.broken.is_none() {
            let (number, start) = (self.lines.number() + 1, self.lines.position());
            if let Some(deal) =
                self.lines
                    .take_block(JUDGE_DEAL_BYTES, PILES as u64, judge_layout)?
            {
                self.set_mark(number, start);
                self.deal_no += 1;
                return Ok(Some(deal));
            }
        }
        if self.fill(1, false) == 0 {
            return match self.broken.take() {
                Some((e, number, start)) => {
                    self.set_mark(number, start);
                    Err(DealFileError::Io(e))
                }
                None => Ok(None),
            };
        }
        let (first_line, first_start) = (self.ahead[0].number, self.ahead[0].start);
        self.set_mark(first_line, first_start);
        self.deal_no += 1;
        let deal = self.deal_no;

        // A position has eight slashes; one stray slash in a pile line must not turn that line
        // into a position and shift the framing of the eight pile lines after it.
        if let Some(parsed) = one_line(&self.ahead[0].text) {
            self.take(1);
            return parsed.map(Some).map_err(|error| {
                DealFileError::Deal(BadDeal {
                    deal,
                    line: first_line,
                    error,
                    skipped: None,
                })
            });
        }

        // Nine pile lines, whatever they hold: a typo costs its own deal only.
        let held = self.fill(PILES, false);
        if held < PILES
            && let Some((e, _, _)) = self.broken.take()
        {
            // The input failed inside this deal.
            self.take(held);
            return Err(DealFileError::Io(e));
        }
        let parsed = piles(lines(self.ahead.range(..held)), deal, self.lines.number());
        let Err(mut bad) = parsed else {
            self.take(PILES);
            return parsed.map(Some).map_err(DealFileError::Deal);
        };
        if held < PILES {
            // The input ended inside this deal.
            self.take(held);
            return Err(DealFileError::Deal(bad));
        }
        match self.realign() {
            None => self.take(PILES),
            Some(skip) => {
                bad.line = first_line;
                bad.skipped = Some(Skipped {
                    last: self.ahead[skip - 1].number,
                    next: self.ahead[skip].number,
                });
                self.take(skip);
            }
        }
        Err(DealFileError::Deal(bad))
    }

    /// After nine lines that are not a deal, where whole deals begin again (see the module docs):
    /// `None` when the next nine lines look framed (the damage was inside the deal: a typo, a card
    /// twice), else the fewest lines to skip, sooner first, after which a deal reads; `None` when
    /// none does within the look-ahead (the nine lines are then one bad deal, as a typo's are).
    fn realign(&mut self) -> Option<usize> {
        self.fill(REALIGN_LINES, true);
        // The look-ahead ends before the first long line past the damaged deal's nine, whether
        // this reader holds it (from an earlier step) or not: the same lines for every reader.
        let window = (PILES..self.ahead.len())
            .find(|&i| self.ahead[i].text.len() > HELD_LINE_BYTES)
            .unwrap_or(self.ahead.len())
            .min(REALIGN_LINES);
        if self.framed_at(PILES, window) {
            return None;
        }
        (1..PILES)
            .chain(PILES + 1..2 * PILES)
            .find(|&skip| self.reads_at(skip, window))
    }

    /// Whether the step from the `at`-th line held looks framed where it is: a deal reads there,
    /// its first line is a one-line step, or its nine lines fail on a line of their own (one that
    /// is not four cards: a typo, a short pile) rather than as a deck (a card twice, as nine good
    /// pile lines from two deals are). Then the damage before it was inside a deal.
    fn framed_at(&self, at: usize, window: usize) -> bool {
        if at >= window {
            return false;
        }
        if one_line(&self.ahead[at].text).is_some() {
            return true;
        }
        window >= at + PILES
            && match piles(lines(self.ahead.range(at..at + PILES)), 0, 0) {
                Ok(_) => true,
                Err(bad) => !matches!(
                    bad.error,
                    DealError::DuplicateCard { .. } | DealError::CardCount { .. }
                ),
            }
    }

    /// Whether nine pile lines that make a deal begin at the `at`-th line held, within the
    /// first `window` lines held. A one-line step is not where deals begin again: the clients
    /// in other languages (patience.remote, clients/node) frame with this rule too, and judge
    /// nine pile lines without the position rules only the engine has.
    fn reads_at(&self, at: usize, window: usize) -> bool {
        at + PILES <= window
            && one_line(&self.ahead[at].text).is_none()
            && piles(lines(self.ahead.range(at..at + PILES)), 0, 0).is_ok()
    }
}

/// The text and number of each line held.
fn lines<'a>(held: impl Iterator<Item = &'a AheadLine>) -> impl Iterator<Item = (&'a [u8], u64)> {
    held.map(|line| (&line.text[..], line.number))
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

    /// `count` random deals (seeded), as the judge writes them: their lines.
    fn random_lines(seed: u64, count: usize) -> (Vec<Deal>, Vec<String>) {
        let mut rng = fastrand::Rng::with_seed(seed);
        let deals: Vec<Deal> = (0..count).map(|_| Deal::shuffled(&mut rng)).collect();
        let lines = deals
            .iter()
            .flat_map(|deal| {
                deal.to_string()
                    .lines()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        (deals, lines)
    }

    /// The worked example of docs/solving.md: deal 2's second line (line 11) is missing, so its
    /// nine lines would run into deal 3's first. Deal 2 is lost, named by its lines, and deal 3
    /// is read from its own first line, now line 18.
    #[test]
    fn a_missing_line_costs_its_deal_and_the_rest_read_as_without_it() {
        let (deals, mut lines) = random_lines(7, 3);
        lines.remove(10);
        let text = lines.join("\n") + "\n";
        let got = read(&text);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0], Ok(deals[0]));
        assert_eq!(got[2], Ok(deals[2]));
        let error = got[1].as_ref().unwrap_err();
        let (head, tail) = (
            "deal 2 (line 10): lines 10-17 do not read as whole deals (nine lines from line 10: ",
            "); skipped, and whole deals begin again at line 18",
        );
        assert!(error.starts_with(head) && error.ends_with(tail), "{error}");
    }

    /// A stray line between deals costs no deal: it is one `error:` step of its own.
    #[test]
    fn a_stray_line_between_deals_is_one_error_and_costs_no_deal() {
        let (deals, mut lines) = random_lines(8, 3);
        lines.insert(9, "AS 9S".to_string());
        let got = read(&(lines.join("\n") + "\n"));
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(
            [&got[0], &got[2], &got[3]],
            [&Ok(deals[0]), &Ok(deals[1]), &Ok(deals[2])]
        );
        assert_eq!(
            got[1],
            Err(
                "deal 2 (line 10): line 10 does not read as a deal (nine lines from line 10: pile \
                 1 has 2 cards; a pile has 4); skipped, and whole deals begin again at line 11"
                    .to_string()
            )
        );
    }

    /// A line written twice inside deal 2 (ten lines, 10-19): deal 2 is lost, deal 3 read from
    /// line 20.
    #[test]
    fn an_extra_line_costs_its_deal_and_the_rest_read_as_without_it() {
        let (deals, mut lines) = random_lines(9, 3);
        lines.insert(12, lines[11].clone());
        let got = read(&(lines.join("\n") + "\n"));
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!([&got[0], &got[2]], [&Ok(deals[0]), &Ok(deals[2])]);
        let error = got[1].as_ref().unwrap_err();
        assert!(
            error.starts_with("deal 2 (line 10): lines 10-19 do not read as whole deals")
                && error.ends_with("whole deals begin again at line 20"),
            "{error}"
        );
    }

    proptest::proptest! {
        /// One line taken out, written twice, or put in (short or long) anywhere in a file of
        /// random deals costs at most two deals, those around it; every other deal is read, in
        /// order, as in the file without the damage.
        #[test]
        fn one_damaged_line_costs_at_most_the_two_deals_around_it(
            seed in proptest::prelude::any::<u64>(),
            at in 0usize..270,
            what in 0u8..4,
            crlf in proptest::prelude::any::<bool>(),
        ) {
            let (deals, mut lines) = random_lines(seed, 30);
            let hit = at / PILES;
            match what {
                0 => { lines.remove(at); }
                1 => lines.insert(at, lines[at].clone()),
                2 => lines.insert(at, "AS 9S".to_string()),
                _ => lines.insert(at, "QS TS JS 9H 8D".to_string()),
            }
            let end = if crlf { "\r\n" } else { "\n" };
            let got = read(&(lines.join(end) + end));
            let read_well: Vec<Deal> = got.iter().filter_map(|r| r.as_ref().ok().copied()).collect();
            let lost: Vec<usize> = (0..deals.len())
                .filter(|i| !read_well.contains(&deals[*i]))
                .collect();
            proptest::prop_assert!(lost.len() <= 2, "lost {:?} for damage at deal {}", lost, hit);
            proptest::prop_assert!(
                lost.iter().all(|&i| i + 1 >= hit && i <= hit + 1),
                "lost {:?} for damage at deal {}", lost, hit
            );
            let kept: Vec<Deal> = (0..deals.len())
                .filter(|i| !lost.contains(i))
                .map(|i| deals[i])
                .collect();
            proptest::prop_assert_eq!(read_well, kept);
        }
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
        // Two lines joined are a line missing: the next deal (another one) is read from its
        // own first line, line 9.
        let (deals, next) = random_lines(3, 1);
        let got = read(&format!("{text}{}\n", next.join("\n")));
        let error = got[0].as_ref().unwrap_err();
        assert!(
            error.starts_with(
                "deal 1 (line 1): lines 1-8 do not read as whole deals (nine lines from line 1: \
                 pile 1's line has a `/` beside 8 cards"
            ),
            "{error}"
        );
        assert!(!error.contains("9 cards"), "{error}");
        assert_eq!(got[1..], [Ok(deals[0])]);
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
