//! Reading rock-paper-scissors cases from a case file, one at a time, in constant memory.
//!
//! # The format
//! The first non-blank line holds `T`, the number of cases. Each case is then a line holding `n`,
//! the number of other players, a line of Maze's three probabilities (rock, paper, scissors), and
//! `n` lines of three, one per other player. Blank lines (and lines of only whitespace) are
//! skipped wherever they appear, tokens may be separated by any whitespace, lines may end in CRLF
//! and a UTF-8 byte-order mark at the start is ignored.
//!
//! # Framing, and how a bad case is contained
//! The reader frames cases by lines and by the shape of a line: a line holding a *single* token
//! starts a case (or is `T`); every other line belongs to the case being read. A case is its start
//! line and the `n + 1` lines after it, so
//! - a player's line with a bad token, or with two or four tokens, is still that player's line:
//!   the case is reported bad and the next case starts exactly where it would have. A typo costs
//!   its own case only.
//! - a line holding a single token where a player's line was due means the case is short (its `n`
//!   is too large, or a line is missing): the case is reported bad ([`CaseError::Missing`]) and
//!   that line is read again as the start of the next case.
//! - a start line that is not a whole number alone on its line (`abc`, `2.5`, `-1`, or three
//!   numbers because the `n` line itself is missing) leaves the length of the case unknown. The
//!   reader then skips to the next line holding a single token and starts the next case there; the
//!   skipped lines are reported as this one bad case ([`CaseError::Others`]).
//! - a start line with a whole number above [`MAX_OTHERS`] still frames its case: its `n + 1`
//!   lines are read (up to a single-token line, as above) and the case is reported bad.
//!
//! - lines of three after a case's `n + 1`, where the next case's start was due, are looked at
//!   before the case is handed on. One such line is the case's own: it has a line too many (or its
//!   `n` is one too small), and it is reported bad ([`CaseError::Extra`]). Several are the next
//!   case, its start line lost: the case before stands, and the next is reported bad
//!   ([`CaseError::Others`]). Either way the cases after read as they would without the damage.
//!   (After the last case, extra lines are the file's trailing input, below.)
//!
//! What this cannot recover from is a player's line that lost two of its numbers (it looks like a
//! case start), an `n` two or more too small, and a lost start line of a case with no other
//! players (one line, taken for the case before's): the numbering of the cases after is then one
//! off, which the count `T` exposes as [`CaseFileError::Trailing`] or
//! [`CaseFileError::Truncated`].
//!
//! An input a writer feeds (a person typing: [`CaseReader::fed_by_a_writer`]) is looked at past a
//! case only when its next line is there already, so someone typing cases sees each answer as soon
//! as the case is complete. Only a bad case may wait for the next start line.
//!
//! # The count, and what ends the input
//! A missing or unreadable `T` ([`CaseFileError::NoCount`], [`CaseFileError::Count`]) ends the input:
//! without it nothing says where the cases stop. Input that ends before `T` cases is
//! [`CaseFileError::Truncated`], naming the case and the line it was waiting for. Anything but blank
//! lines after the `T`-th case is [`CaseFileError::Trailing`], reported once without reading further:
//! the cases before it were all read, so whether that fails a run is the caller's choice, but it is
//! never silently ignored, because a `T` that is too small is an easy way to lose cases.

use std::borrow::Cow;
use std::io::{self, BufRead};

use crate::lines::Lines;
use crate::mark::Mark;

use super::{Case, CaseError, MAX_OTHERS, Token, Who, parse_triple, quote};

/// A case that could not be read, with where it is in the input.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("case {case} (line {line}): {error}")]
pub struct BadCase {
    /// 1-based number of the case in the input.
    pub case: u64,
    /// 1-based line where the problem was found.
    pub line: u64,
    pub error: CaseError,
}

/// What a truncated input was still waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// The line holding the case's `n`.
    Start,
    /// A player's line: Maze's or another player's.
    Line(Who),
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Start => f.write_str("its number of other players"),
            Expected::Line(who) => write!(f, "{who}'s line"),
        }
    }
}

/// Why the reader could not produce a case.
#[derive(Debug, thiserror::Error)]
pub enum CaseFileError {
    /// This case is bad; the reader has moved past it and can go on.
    #[error(transparent)]
    Case(#[from] BadCase),
    /// There is no count: the input is empty or blank. Nothing more can be read.
    #[error("the input is empty; it must start with the number of cases")]
    NoCount,
    /// The first line is not a count. Nothing more is read.
    #[error(
        "line {line}: {token} is not a number of cases (the input must start with a whole number \
         alone on its line)"
    )]
    Count { line: u64, token: Token },
    /// The input ended inside the announced cases. Nothing more can be read.
    #[error(
        "case {case}: the input ends after line {line}, before {expected}; {cases} {} announced",
        if *cases == 1 { "case was" } else { "cases were" }
    )]
    Truncated {
        case: u64,
        line: u64,
        expected: Expected,
        cases: u64,
    },
    /// A non-blank line after the last announced case. Nothing more is read.
    #[error(
        "line {line}: more input after the {cases} announced {}",
        if *cases == 1 { "case" } else { "cases" }
    )]
    Trailing { line: u64, cases: u64 },
    /// The input itself failed; nothing more can be read.
    #[error("read failed: {0}")]
    Io(io::Error),
}

impl CaseFileError {
    /// Whether the reader stops after this error; only a bad case lets it go on.
    pub fn ends_input(&self) -> bool {
        !matches!(self, CaseFileError::Case(_))
    }
}

impl From<io::Error> for CaseFileError {
    fn from(e: io::Error) -> Self {
        CaseFileError::Io(e)
    }
}

/// Iterates over the cases of a case file. Holds one line at a time.
#[derive(Debug)]
pub struct CaseReader<R> {
    lines: Lines<R>,
    /// The current line is a start line that the case before found where it wanted one of its
    /// own lines; the next read returns it again.
    held: bool,
    /// `T`, once read.
    count: Option<u64>,
    /// Cases begun so far.
    case_no: u64,
    done: bool,
    /// Steps taken, and where the last one's first line is, for framing ([`CaseReader::mark`]);
    /// where reading began.
    steps: u64,
    first: Mark,
    origin: Mark,
    /// For an input fed by a writer who may wait for each answer (a person typing): whether a
    /// line after a case is there to look at without waiting for one.
    at_hand: Option<fn(&R) -> bool>,
    /// The next case, found bad while looking past the one before (its start line lost), and
    /// where its step begins.
    pending: Option<(BadCase, Mark)>,
    /// The input's failure met while looking past a case: the case is handed on whole, and the
    /// next read fails as it would have.
    failed: Option<io::Error>,
}

impl<R: BufRead> CaseReader<R> {
    pub fn new(input: R) -> Self {
        CaseReader::resumed(input, &Mark::default())
    }

    /// A reader of an input that stands where `at` says, a step's first line found by framing
    /// the file (a shard's first case): it numbers cases and lines on from there.
    pub fn resumed(input: R, at: &Mark) -> Self {
        CaseReader {
            lines: Lines::resumed(input, at.line),
            held: false,
            count: at.count,
            case_no: at.item,
            done: false,
            steps: 0,
            first: Mark::default(),
            origin: *at,
            at_hand: None,
            pending: None,
            failed: None,
        }
    }

    /// The same reader, for an input fed by a writer who may wait for the answers so far before
    /// writing more: the line after a case is looked at only when `at_hand` says it is there
    /// (see [`CaseError::Extra`]), so a typed case is answered without waiting for the next.
    pub fn fed_by_a_writer(mut self, at_hand: fn(&R) -> bool) -> Self {
        self.at_hand = Some(at_hand);
        self
    }

    /// Where the last step began: the first step of a file at its start, and each later one at
    /// its first line (a line held from the case before included), or at the end of the input
    /// for a case that finds none; offsets from the file's start.
    pub fn mark(&self) -> Mark {
        match self.steps {
            0 | 1 if self.origin == Mark::default() => Mark::default(),
            _ => self.first,
        }
    }

    /// The mark of a step whose first line is the current one (or the end), `cases` before it.
    fn here(&self, cases: u64) -> Mark {
        Mark {
            offset: self.origin.offset + self.lines.start(),
            line: self.lines.before(),
            item: cases,
            count: self.count,
        }
    }

    /// The underlying input, for example to see whether it has more data buffered.
    pub fn get_ref(&self) -> &R {
        self.lines.get_ref()
    }

    /// The number of cases the input announced, once the first case has been asked for.
    pub fn announced(&self) -> Option<u64> {
        self.count
    }

    /// Moves to the next non-blank line, or hands back the held one; false at the end of the input.
    fn next_line(&mut self) -> io::Result<bool> {
        if std::mem::take(&mut self.held) {
            return Ok(true);
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.lines.advance()
    }

    /// The line after a case, looked at without failing the case: `false` at the end of the
    /// input, and when the input fails there (kept for the next read).
    fn peek_line(&mut self) -> bool {
        match self.next_line() {
            Ok(more) => more,
            Err(e) => {
                self.failed = Some(e);
                false
            }
        }
    }

    /// The current line as text (borrowed: `Lines` hands on only lines that are UTF-8).
    fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(self.lines.line())
    }

    /// Whether the current line holds a single token, the shape of a start line.
    fn is_start(&self) -> bool {
        self.text().split_whitespace().nth(1).is_none()
    }

    fn read_count(&mut self) -> Result<u64, CaseFileError> {
        if !self.next_line()? {
            return Err(CaseFileError::NoCount);
        }
        let text = self.text();
        let mut tokens = text.split_whitespace();
        match (tokens.next().map(str::parse::<u64>), tokens.next()) {
            (Some(Ok(count)), None) => Ok(count),
            _ => Err(CaseFileError::Count {
                line: self.lines.number(),
                token: quote(text.trim()),
            }),
        }
    }

    /// Skips lines up to the next start line (held for the next case) or the end; returns how many.
    fn skip_to_start(&mut self) -> io::Result<u64> {
        let mut skipped = 0;
        while self.next_line()? {
            if self.is_start() {
                self.held = true;
                break;
            }
            skipped += 1;
        }
        Ok(skipped)
    }

    /// The next case, or `None` after the last; the count is read first if it has not been.
    fn advance(&mut self) -> Result<Option<Case>, CaseFileError> {
        let cases = match self.count {
            Some(cases) => cases,
            None => {
                let cases = self.read_count()?;
                self.count = Some(cases);
                cases
            }
        };
        if self.case_no < cases {
            return self.read_case(cases).map(Some);
        }
        self.done = true;
        let more = self.next_line();
        self.first = self.here(cases);
        match more? {
            true => Err(CaseFileError::Trailing {
                line: self.lines.number(),
                cases,
            }),
            false => Ok(None),
        }
    }

    fn read_case(&mut self, cases: u64) -> Result<Case, CaseFileError> {
        self.case_no += 1;
        let case = self.case_no;
        if let Some((bad, at)) = self.pending.take() {
            self.first = at;
            return Err(CaseFileError::Case(bad));
        }
        let truncated = |line, expected| CaseFileError::Truncated {
            case,
            line,
            expected,
            cases,
        };
        let bad = |line, error| CaseFileError::Case(BadCase { case, line, error });

        let more = self.next_line();
        self.first = self.here(case - 1);
        if !more? {
            return Err(truncated(self.lines.number(), Expected::Start));
        }
        let start = self.lines.number();
        let parsed = match self.is_start() {
            true => self.text().trim().parse::<u64>().ok(),
            false => None,
        };
        let Some(n) = parsed else {
            let token = quote(self.text().trim());
            let skipped = self.skip_to_start()?;
            return Err(bad(start, CaseError::Others { token, skipped }));
        };

        // Every line of the case is read even after an error, to keep the framing.
        let mut first_error =
            (n > MAX_OTHERS as u64).then_some((start, CaseError::TooManyOthers { n }));
        let mut maze = [0.0; 3];
        let mut players = [[0.0; 3]; MAX_OTHERS];
        for k in 0..=n {
            let who = if k == 0 { Who::Maze } else { Who::Player(k) };
            if !self.next_line()? {
                return Err(truncated(self.lines.number(), Expected::Line(who)));
            }
            if self.is_start() {
                self.held = true;
                let (line, error) =
                    first_error.unwrap_or((self.lines.number(), CaseError::Missing { who }));
                return Err(bad(line, error));
            }
            if first_error.is_some() {
                continue;
            }
            match parse_triple(who, &self.text()) {
                Ok(triple) if k == 0 => maze = triple,
                // 1 <= k <= n <= MAX_OTHERS here, so every player has a row.
                Ok(triple) => players[(k - 1) as usize] = triple,
                Err(error) => first_error = Some((self.lines.number(), error)),
            }
        }
        // The line after a case must start the next one. More lines of three mean this case's `n`
        // is too small, or a line is extra: the case is bad, and its extra lines are skipped to
        // the next start, so the cases after it are read as in the file without the damage. (The
        // last case's extra lines are the file's trailing input, said as such.)
        if case < cases
            && self
                .at_hand
                .is_none_or(|at_hand| at_hand(self.lines.get_ref()))
            && self.peek_line()
        {
            if self.is_start() {
                self.held = true;
            } else {
                let line = self.lines.number();
                let next = self.here(case);
                let token = quote(self.text().trim());
                let more = self.skip_to_start()?;
                if more == 0 {
                    // One line: this case's own, extra.
                    let (line, error) = first_error.unwrap_or((line, CaseError::Extra { n }));
                    return Err(bad(line, error));
                }
                // Several: the next case, its start line lost. This case stands; the next is bad.
                let skipped = more;
                let error = CaseError::Others { token, skipped };
                let case = case + 1;
                self.pending = Some((BadCase { case, line, error }, next));
            }
        }
        if let Some((line, error)) = first_error {
            return Err(bad(line, error));
        }
        // Every triple passed the same checks that `Case::new` makes.
        Case::new(maze, &players[..n as usize]).map_err(|error| bad(start, error))
    }
}

impl<R: BufRead> Iterator for CaseReader<R> {
    type Item = Result<Case, CaseFileError>;

    /// Yields cases in input order, then at most one error that ends the input.
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.steps += 1;
        match self.advance() {
            Ok(case) => case.map(Ok),
            Err(e) => {
                self.done |= e.ends_input();
                Some(Err(e))
            }
        }
    }
}
