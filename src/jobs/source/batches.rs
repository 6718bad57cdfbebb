//! Turning inputs into batches of items (deals, or rock-paper-scissors cases), for `solve`,
//! `client` and `rps` alike.

use crate::deal::Deal;
pub use crate::items::{Items, Step};
use crate::mark::Mark;

use super::input::{self, Input, Reader, consumed};
use super::parquet_in::{self, InputFormat, ParquetRows};
use super::shard::Segment;

/// An item, or the message of its `error:` line (already naming the file, item and line).
pub type Entry<T = Deal> = Result<T, String>;

/// What the reader hands on, in input order.
#[derive(Debug)]
pub enum Batched<T = Deal> {
    /// Consecutive items of one input, and how many bytes of all the inputs (in order) they and
    /// the items before them span, for progress reports.
    Batch(Vec<Entry<T>>, u64),
    /// Items read and not handed on, since their answers are in the output already (a resume):
    /// how many, how many of them were bad, and the bytes they and the items before them span.
    /// Said every [`SKIP_REPORT`] items and at the end of the skip; batches come only after.
    Skipped { items: u64, bad: u64, at: u64 },
    /// An input that could not be read (further); its message names the input.
    Unreadable(String),
}

/// How often a long skip says how far it is, in items.
pub const SKIP_REPORT: u64 = 1 << 16;

/// How many items a batch holds at most: a fixed number (a client's items per request message),
/// or one that starts small and doubles with each batch up to a ceiling (the in-process pool's
/// jobs). Each pool job costs a queue hop and a wake-up or two (several microseconds here), so a
/// long input wants large jobs; a short one wants small ones, or its few jobs leave workers idle.
#[derive(Clone, Copy, Debug)]
pub struct BatchSize {
    next: usize,
    max: usize,
}

impl BatchSize {
    /// Every batch holds up to `n` items.
    pub const fn fixed(n: usize) -> BatchSize {
        BatchSize::growing(n, n)
    }

    /// The first batch holds up to `first` items, each next one twice as many, up to `max`.
    pub const fn growing(first: usize, max: usize) -> BatchSize {
        let max = if max == 0 { 1 } else { max };
        let next = if first == 0 { 1 } else { first };
        BatchSize {
            next: if next > max { max } else { next },
            max,
        }
    }

    /// The most a batch ever holds.
    pub const fn max(&self) -> usize {
        self.max
    }

    /// The size of the next batch.
    fn take(&mut self) -> usize {
        let size = self.next;
        self.next = (size * 2).min(self.max);
        size
    }
}

/// Items still to skip, and those skipped but not yet said.
struct Skip {
    left: u64,
    items: u64,
    bad: u64,
}

impl Skip {
    /// Counts an item skipped; whether it is time to say so.
    fn take(&mut self, bad: bool) -> bool {
        self.left -= 1;
        self.items += 1;
        self.bad += u64::from(bad);
        self.left == 0 || self.items >= SKIP_REPORT
    }

    /// What was skipped since last said, the skip reaching `at` bytes.
    fn said<T>(&mut self, at: u64) -> Batched<T> {
        Batched::Skipped {
            items: std::mem::take(&mut self.items),
            bad: std::mem::take(&mut self.bad),
            at,
        }
    }
}

/// What a run reads: its inputs, the segments of them a shard reads (`None`: every input whole),
/// and how many items to read again without answering them (a resume).
#[derive(Clone, Debug)]
pub struct ToRead {
    pub inputs: Vec<Input>,
    pub segments: Option<Vec<Segment>>,
    pub skip: u64,
    /// Text, Parquet, or each input by its first bytes.
    pub format: InputFormat,
    /// Where each item's id goes, in order, for the printer (a run with a Parquet input): one
    /// per item handed on, `None` for an item without one.
    pub ids: Option<Ids>,
}

/// Each item's id, from the reader to the printer, in input order.
pub type Ids = std::sync::mpsc::Sender<Option<String>>;

/// Reads every input in order (a shard: its segments) with the game's reader `R` and calls `emit`
/// with batches of the sizes `sizes` gives, after the first `reading.skip` entries, which are read
/// the same way and only counted (a resume: their answers are in the output already). A batch is
/// also cut short whenever the input has nothing more buffered, so that someone typing items sees
/// each answer without waiting for a full batch. Stops early when `emit` returns false.
pub fn read_items<R: Items<Reader>>(
    reading: &ToRead,
    mut sizes: BatchSize,
    mut emit: impl FnMut(Batched<R::Item>) -> bool,
) {
    let mut max = sizes.take();
    let mut skip = Skip {
        left: reading.skip,
        items: 0,
        bad: 0,
    };
    let whole: Vec<Segment>;
    let (segments, sharded) = match &reading.segments {
        Some(segments) => (segments, true),
        None => {
            whole = (0..reading.inputs.len())
                .map(|input| Segment {
                    input,
                    at: Mark::default(),
                    items: 0,
                    to_end: true,
                    before: 0,
                })
                .collect();
            (&whole, false)
        }
    };
    // Bytes of the inputs finished so far (of the shard's range, for a shard).
    let mut done = 0u64;
    for segment in segments {
        let Some(input) = reading.inputs.get(segment.input) else {
            continue;
        };
        if sharded {
            done = segment.before;
        }
        let prefix = input.prefix();
        if let Some(place) = input.location()
            && parquet_in::is_parquet(place, reading.format)
        {
            // A shard reads the rows it planned; a whole run, all of them.
            let span = sharded.then(|| segment.at.item..segment.at.item + segment.items);
            let size = input.exact_size().unwrap_or(0);
            let mut rows = ParquetRows::open(place, size, span);
            let state = RowState {
                skip: &mut skip,
                max: &mut max,
                sizes: &mut sizes,
                ids: reading.ids.as_ref(),
            };
            let go_on = match &mut rows {
                Ok(rows) => read_rows::<R>(rows, &prefix, done, state, &mut emit),
                Err(why) => emit(Batched::Unreadable(format!("{prefix}{why}"))),
            };
            if !go_on {
                return;
            }
            done += size;
            continue;
        }
        let reader = match input.open_at(segment.at.offset) {
            Ok(r) => r,
            Err(e) => {
                let label = match input.is_stdin() {
                    true => "standard input".to_string(),
                    false => input.name(),
                };
                if !emit(Batched::Unreadable(format!("cannot open {label}: {e}"))) {
                    return;
                }
                continue;
            }
        };
        let mut items = R::resumed(reader, &segment.at);
        if !input.rereadable() {
            items = items.fed_by_a_writer(input::at_hand);
        }
        // Items this segment still has, when it stops before the input's end.
        let mut left = (!segment.to_end).then_some(segment.items);
        let mut batch = Vec::with_capacity(max);
        loop {
            if left == Some(0) {
                break;
            }
            let Some(step) = items.step() else {
                if left.is_some_and(|left| left > 0) {
                    let at = done + consumed(items.input());
                    if !batch.is_empty() && !emit(Batched::Batch(std::mem::take(&mut batch), at)) {
                        return;
                    }
                    let message = format!(
                        "{prefix}ended before the items this shard framed in it (was it changed \
                         while read?)"
                    );
                    if !emit(Batched::Unreadable(message)) {
                        return;
                    }
                }
                break;
            };
            if !matches!(step, Step::Failed(_)) {
                left = left.map(|left| left - 1);
            }
            if skip.left > 0 && !matches!(step, Step::Failed(_)) {
                if skip.take(matches!(step, Step::Bad(_)))
                    && !emit(skip.said(done + consumed(items.input())))
                {
                    return;
                }
                continue;
            }
            // Each item answered has an id, none from a text input (an input that failed has none).
            if let (Some(ids), Step::Item(_) | Step::Bad(_)) = (&reading.ids, &step) {
                let _ = ids.send(None);
            }
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
            if batch.len() >= max || dry {
                max = sizes.take();
                let full = std::mem::replace(&mut batch, Vec::with_capacity(max));
                if !emit(Batched::Batch(full, done + consumed(items.input()))) {
                    return;
                }
            }
        }
        let end = done + consumed(items.input());
        if !batch.is_empty() && !emit(Batched::Batch(batch, end)) {
            return;
        }
        done = end;
    }
    // The inputs ended before the skip did: say how far it got (the printer refuses the resume).
    if skip.items > 0 {
        emit(skip.said(done));
    }
}

/// What reading rows shares with the rest of [`read_items`].
struct RowState<'a> {
    skip: &'a mut Skip,
    max: &'a mut usize,
    sizes: &'a mut BatchSize,
    ids: Option<&'a Ids>,
}

/// Reads a Parquet input's rows as items, after `done` bytes of the inputs before it; false when
/// `emit` said to stop.
fn read_rows<R: Items<Reader>>(
    rows: &mut ParquetRows,
    prefix: &str,
    done: u64,
    state: RowState<'_>,
    emit: &mut impl FnMut(Batched<R::Item>) -> bool,
) -> bool {
    let mut batch = Vec::with_capacity(*state.max);
    while let Some(row) = rows.next_row() {
        let row = match row {
            Ok(row) => row,
            Err(why) => {
                let at = done + rows.consumed();
                if !batch.is_empty() && !emit(Batched::Batch(std::mem::take(&mut batch), at)) {
                    return false;
                }
                return emit(Batched::Unreadable(format!("{prefix}{why}")));
            }
        };
        let entry = match row.deal.as_deref().map(R::row) {
            Some(Some(entry)) => entry,
            None => Err("no deal (null)".to_string()),
            Some(None) => {
                return emit(Batched::Unreadable(format!(
                    "{prefix}a Parquet input holds deals, one per row; this game reads its own \
                     text format"
                )));
            }
        };
        if state.skip.left > 0 {
            if state.skip.take(entry.is_err()) && !emit(state.skip.said(done + rows.consumed())) {
                return false;
            }
            continue;
        }
        if let Some(ids) = state.ids {
            let _ = ids.send(row.id);
        }
        batch.push(entry.map_err(|message| format!("{prefix}row {}: {message}", rows.row())));
        if batch.len() >= *state.max {
            *state.max = state.sizes.take();
            let full = std::mem::replace(&mut batch, Vec::with_capacity(*state.max));
            if !emit(Batched::Batch(full, done + rows.consumed())) {
                return false;
            }
        }
    }
    batch.is_empty() || emit(Batched::Batch(batch, done + rows.consumed()))
}

#[cfg(test)]
mod tests {
    use super::BatchSize;

    fn sizes(mut s: BatchSize, n: usize) -> Vec<usize> {
        (0..n).map(|_| s.take()).collect()
    }

    #[test]
    fn a_growing_size_doubles_up_to_its_ceiling_and_a_fixed_one_stays() {
        assert_eq!(
            sizes(BatchSize::growing(16, 256), 7),
            [16, 32, 64, 128, 256, 256, 256]
        );
        assert_eq!(
            sizes(BatchSize::growing(16, 100), 5),
            [16, 32, 64, 100, 100]
        );
        assert_eq!(sizes(BatchSize::fixed(256), 3), [256, 256, 256]);
        assert_eq!(sizes(BatchSize::growing(0, 0), 2), [1, 1]);
        assert_eq!(sizes(BatchSize::growing(50, 10), 2), [10, 10]);
    }
}
