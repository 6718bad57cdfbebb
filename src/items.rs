//! A file of either game's items, read one step at a time, for everyone who reads such files:
//! the CLI's inputs (`cli/batches.rs`) and the daemon's plain HTTP API (`server/api.rs`), so that
//! both cut, count and word bad items the same way.

use std::io::BufRead;

use crate::deal::{self, Deal, DealReader};
use crate::rps::{self, Case, CaseReader};

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
    /// The input, to see how far it has been read and whether more is buffered.
    fn input(&self) -> &R;
    fn step(&mut self) -> Option<Step<Self::Item>>;
}

impl<R: BufRead> Items<R> for DealReader<R> {
    type Item = Deal;
    fn over(input: R) -> Self {
        DealReader::new(input)
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
}

/// A case file's count, truncation and trailing text are the file's content, not I/O: they get an
/// `error:` line in place, like a bad case, so that a run over several files goes on and fails
/// with status 1, not 2.
impl<R: BufRead> Items<R> for CaseReader<R> {
    type Item = Case;
    fn over(input: R) -> Self {
        CaseReader::new(input)
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
