//! Turning inputs into batches of deals, for `solve` and `client` alike.

use crate::deal::{Deal, DealReader, ReadError};

use super::input::{Input, consumed};

/// A deal, or the message of its `error:` line (already naming the file, deal and line).
pub type Entry = Result<Deal, String>;

/// What the reader hands on, in input order.
pub enum Event {
    /// Consecutive deals of one input, and how many bytes of all the inputs (in order) they and
    /// the deals before them span, for progress reports.
    Batch(Vec<Entry>, u64),
    /// An input that could not be read (further); its message names the input.
    Unreadable(String),
}

/// Reads every input in order and calls `emit` with batches of at most `max` entries. A batch is
/// also cut short whenever the input has nothing more buffered, so that someone typing deals sees
/// each answer without waiting for a full batch. Stops early when `emit` returns false.
pub fn read_batches(inputs: &[Input], max: usize, mut emit: impl FnMut(Event) -> bool) {
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
                if !emit(Event::Unreadable(format!("cannot open {label}: {e}"))) {
                    return;
                }
                continue;
            }
        };
        let prefix = input.prefix();
        let mut deals = DealReader::new(reader);
        let mut batch = Vec::with_capacity(max);
        while let Some(item) = deals.next() {
            match item {
                Ok(deal) => batch.push(Ok(deal)),
                Err(ReadError::Deal(bad)) => batch.push(Err(format!("{prefix}{bad}"))),
                Err(ReadError::Io(e)) => {
                    let at = done + consumed(deals.get_ref());
                    if !batch.is_empty() && !emit(Event::Batch(std::mem::take(&mut batch), at)) {
                        return;
                    }
                    if !emit(Event::Unreadable(format!("{prefix}{e}"))) {
                        return;
                    }
                    break;
                }
            }
            let dry = deals.get_ref().buffer().is_empty();
            if (batch.len() >= max || dry)
                && !emit(Event::Batch(
                    std::mem::replace(&mut batch, Vec::with_capacity(max)),
                    done + consumed(deals.get_ref()),
                ))
            {
                return;
            }
        }
        let end = done + consumed(deals.get_ref());
        if !batch.is_empty() && !emit(Event::Batch(batch, end)) {
            return;
        }
        done = end;
    }
}
