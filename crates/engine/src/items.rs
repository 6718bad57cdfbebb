//! A file of either game's items, read one step at a time, for everyone who reads such files:
//! the CLI's inputs (`jobs/batches.rs`) and the daemon's plain HTTP API (`server/api.rs`), so that
//! both cut, count and word bad items the same way.

use std::io::{self, BufRead};

use crate::deal::{self, Deal, DealReader};
use crate::rps::{self, Case, CaseReader};

use crate::mark::{Framed, Mark};

/// What one step of a game's reader produced, as the batcher needs to tell it.
#[derive(Debug)]
pub enum Step<T> {
    Item(T),
    /// Bad content: an `error:` line in the output, and reading goes on (the reader decides
    /// whether anything follows).
    Bad(String),
    /// The input itself failed: nothing more can be read from it.
    Failed(String),
}

/// A game's streaming reader over one input. Each game keeps its own error type; this is only
/// the part the batcher looks at, so that both games batch, count bytes and cut batches short
/// the same way.
pub trait Items<R: BufRead> {
    type Item;
    fn over(input: R) -> Self;
    /// A reader of `input`, which stands at `at.offset` of its file: it reads on from there as one
    /// that read everything before would.
    fn resumed(input: R, at: &Mark) -> Self;
    /// Frames the steps of `input`, which stands at `from` (a step's mark, or the default for its
    /// start), in order, calling `seen` with each one's [`Mark`] (offsets from the file's start)
    /// once it is complete, until the input ends or fails or `seen` returns false. Never solves
    /// anything, and reads as little as the game's framing allows.
    fn frame(input: R, from: &Mark, seen: &mut dyn FnMut(Framed) -> bool) -> io::Result<()>;
    /// The same reader, for an input fed by a writer who may wait for the answers before writing
    /// more: it never waits for lines past the step it reads unless `at_hand` says they are
    /// there (deals: [`DealReader::fed_by_a_writer`]).
    fn fed_by_a_writer(self, _at_hand: fn(&R) -> bool) -> Self
    where
        Self: Sized,
    {
        self
    }

    /// The input, to see how far it has been read and whether more is buffered.
    fn input(&self) -> &R;
    fn step(&mut self) -> Option<Step<Self::Item>>;
    /// An item from a row's text (a Parquet input's `deal`), or the message of its bad line;
    /// `None` for a game whose items do not come in rows.
    fn row(_text: &str) -> Option<Result<Self::Item, String>> {
        None
    }
}

impl<R: BufRead> Items<R> for DealReader<R> {
    type Item = Deal;
    fn over(input: R) -> Self {
        DealReader::new(input)
    }
    fn resumed(input: R, at: &Mark) -> Self {
        DealReader::at(input, at)
    }
    fn frame(input: R, from: &Mark, seen: &mut dyn FnMut(Framed) -> bool) -> io::Result<()> {
        deal::frame::frame(input, from, seen)
    }
    fn fed_by_a_writer(self, at_hand: fn(&R) -> bool) -> Self {
        DealReader::fed_by_a_writer(self, at_hand)
    }
    fn input(&self) -> &R {
        self.get_ref()
    }
    fn step(&mut self) -> Option<Step<Deal>> {
        Some(match self.next()? {
            Ok(deal) => Step::Item(deal),
            Err(deal::DealFileError::Deal(bad)) => Step::Bad(bad.to_string()),
            Err(deal::DealFileError::Io(e)) => Step::Failed(e.to_string()),
        })
    }
    fn row(text: &str) -> Option<Result<Deal, String>> {
        Some(Deal::parse(text).map_err(|e| e.to_string()))
    }
}

/// A case file's count, truncation and trailing text are the file's content, not I/O: they get an
/// `error:` line in place, like a bad case, so that a run over several files goes on and fails
/// with status 1, not 2.
impl<R: BufRead> Items<R> for CaseReader<R> {
    type Item = Case;
    fn over(input: R) -> Self {
        CaseReader::new(input)
    }
    fn resumed(input: R, at: &Mark) -> Self {
        CaseReader::resumed(input, at)
    }
    /// A case's length is its `n`, and a line holding one token where a player's was due ends a
    /// case early: framing cases takes the reader itself, which parses the prefix it frames
    /// (about a microsecond a case) but solves nothing (up to a millisecond a case).
    fn frame(input: R, from: &Mark, seen: &mut dyn FnMut(Framed) -> bool) -> io::Result<()> {
        let mut reader = CaseReader::resumed(input, from);
        loop {
            let step = reader.next();
            let mark = reader.mark();
            let framed = match step {
                None => return Ok(()),
                Some(Err(rps::CaseFileError::Io(_))) => Framed::Failed(mark),
                Some(_) => Framed::Item(mark),
            };
            if !seen(framed) || matches!(framed, Framed::Failed(_)) {
                return Ok(());
            }
        }
    }
    fn fed_by_a_writer(self, at_hand: fn(&R) -> bool) -> Self {
        CaseReader::fed_by_a_writer(self, at_hand)
    }
    fn input(&self) -> &R {
        self.get_ref()
    }
    fn step(&mut self) -> Option<Step<Case>> {
        Some(match self.next()? {
            Ok(case) => Step::Item(case),
            // The input's own words, as for deals: both games say an unreadable file alike.
            Err(rps::CaseFileError::Io(e)) => Step::Failed(e.to_string()),
            Err(e) => Step::Bad(e.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every step of `text`, said in words.
    fn steps<T: std::fmt::Debug, I: Items<&'static [u8], Item = T>>(mut items: I) -> Vec<String> {
        std::iter::from_fn(|| items.step())
            .map(|step| format!("{step:?}"))
            .collect()
    }

    /// A reader started at any step's mark reads the same rest as one that read everything
    /// before it (what a shard's first reader relies on), and framing from it frames the same rest
    /// (what framing from an index's mark relies on).
    fn resumes_at_every_mark<T: std::fmt::Debug, I: Items<&'static [u8], Item = T>>(
        text: &'static str,
    ) {
        let bytes = text.as_bytes();
        let whole = steps(I::over(bytes));
        let mut marks = Vec::new();
        I::frame(bytes, &Mark::default(), &mut |framed| {
            marks.push(framed);
            true
        })
        .unwrap();
        assert_eq!(marks.len(), whole.len(), "one mark per step: {text:?}");
        for (i, framed) in marks.iter().enumerate() {
            let (Framed::Item(mark) | Framed::Failed(mark)) = framed;
            let offset = usize::try_from(mark.offset).unwrap();
            let rest = steps(I::resumed(&bytes[offset..], mark));
            assert_eq!(rest, whole[i..], "from step {i} ({mark:?}) of {text:?}");
            // Framing from the mark (what an index starts from) finds the same marks on.
            let mut framed_on = Vec::new();
            I::frame(&bytes[offset..], mark, &mut |framed| {
                framed_on.push(framed);
                true
            })
            .unwrap();
            assert_eq!(framed_on, marks[i..], "framed from step {i} of {text:?}");
        }
    }

    const SAMPLE: &str = "AS 9S 6C KS\nJC QH AC KH\n7S QD JD KD\nQS TS JS 9H\n6D TD AD 8S\n\
                          QC TH KC 8D\n8C 9D TC 7C\n9C 7H JH 7D\n8H 6S AH 6H\n";

    #[test]
    fn deal_readers_resume_at_every_mark() {
        let text = format!(
            "\u{feff}\n{SAMPLE}\n\r\n{}\nAS 9S\n{SAMPLE}7S 6S / 6C 6H / 7C 6D / / / / / /\n\
             {SAMPLE}\n\nAS\0\n{SAMPLE}",
            SAMPLE.replace('\n', " ")
        );
        resumes_at_every_mark::<Deal, DealReader<&[u8]>>(text.leak());
        resumes_at_every_mark::<Deal, DealReader<&[u8]>>(&SAMPLE[..40]);
    }

    #[test]
    fn case_readers_resume_at_every_mark() {
        let maze = "0.2 0.3 0.5\n";
        for text in [
            // Good cases, blank lines, CRLF.
            format!("3\n\n1\n{maze}{maze}\r\n0\n{maze}2\n{maze}{maze}\n{maze}"),
            // A short case (its start line held for the next), a bad start line (skipped to the
            // next start), a bad triple, then trailing text.
            format!("4\n2\n{maze}{maze}0\n{maze}abc\n{maze}{maze}1\n{maze}0.1 x 0.2\n0\n{maze}9\n"),
            // Truncated in a case, and before one.
            format!("3\n1\n{maze}{maze}1\n{maze}"),
            format!("2\n0\n{maze}"),
            // No count, a bad count, and a line that is not text.
            String::new(),
            "x y\n0\n".to_string(),
            format!("2\n0\n{maze}0\n0.1\0\n"),
        ] {
            resumes_at_every_mark::<Case, CaseReader<&[u8]>>(text.leak());
        }
    }
}
