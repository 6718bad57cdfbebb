//! Turning inputs into batches of items (deals, or rock-paper-scissors cases), for `solve`,
//! `client` and `rps` alike.

use crate::deal::{self, Deal, DealReader};
use crate::rps::{self, Case, CaseReader};

use super::input::{Input, Reader, consumed};

/// An item, or the message of its `error:` line (already naming the file, item and line).
pub type Entry<T = Deal> = Result<T, String>;

/// What the reader hands on, in input order.
pub enum Batched<T = Deal> {
    /// Consecutive items of one input, and how many bytes of all the inputs (in order) they and
    /// the items before them span, for progress reports.
    Batch(Vec<Entry<T>>, u64),
    /// An input that could not be read (further); its message names the input.
    Unreadable(String),
}

/// What one step of a game's reader produced, as the batcher needs to tell it.
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
pub trait Items {
    type Item;
    fn over(input: Reader) -> Self;
    /// The input, to see how far it has been read and whether more is buffered.
    fn input(&self) -> &Reader;
    fn step(&mut self) -> Option<Step<Self::Item>>;
}

impl Items for DealReader<Reader> {
    type Item = Deal;
    fn over(input: Reader) -> Self {
        DealReader::new(input)
    }
    fn input(&self) -> &Reader {
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
impl Items for CaseReader<Reader> {
    type Item = Case;
    fn over(input: Reader) -> Self {
        CaseReader::new(input)
    }
    fn input(&self) -> &Reader {
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

/// Reads every input in order with the game's reader `R` and calls `emit` with batches of at most
/// `max` entries. A batch is also cut short whenever the input has nothing more buffered, so that
/// someone typing items sees each answer without waiting for a full batch. Stops early when
/// `emit` returns false.
pub fn read_items<R: Items>(
    inputs: &[Input],
    max: usize,
    mut emit: impl FnMut(Batched<R::Item>) -> bool,
) {
    let max = max.max(1);
    // Bytes of the inputs finished so far.
    let mut done = 0u64;
    for input in inputs {
        let reader = match input.open() {
            Ok(r) => r,
            Err(e) => {
                let label = match input {
                    Input::Stdin => "standard input".to_string(),
                    Input::File(p) => p.display().to_string(),
                };
                if !emit(Batched::Unreadable(format!("cannot open {label}: {e}"))) {
                    return;
                }
                continue;
            }
        };
        let prefix = input.prefix();
        let mut items = R::over(reader);
        let mut batch = Vec::with_capacity(max);
        while let Some(step) = items.step() {
            match step {
                Step::Item(item) => batch.push(Ok(item)),
                Step::Bad(message) => batch.push(Err(format!("{prefix}{message}"))),
                Step::Failed(message) => {
                    let at = done + consumed(items.input());
                    if !batch.is_empty() && !emit(Batched::Batch(std::mem::take(&mut batch), at)) {
                        return;
                    }
                    if !emit(Batched::Unreadable(format!("{prefix}{message}"))) {
                        return;
                    }
                    break;
                }
            }
            let dry = items.input().buffer().is_empty();
            if (batch.len() >= max || dry)
                && !emit(Batched::Batch(
                    std::mem::replace(&mut batch, Vec::with_capacity(max)),
                    done + consumed(items.input()),
                ))
            {
                return;
            }
        }
        let end = done + consumed(items.input());
        if !batch.is_empty() && !emit(Batched::Batch(batch, end)) {
            return;
        }
        done = end;
    }
}
