//! Parquet inputs: a file or an object whose string column `deal` holds one deal per row (the 36
//! cards as the HTTP API and the gRPC API take them, or a position), with an optional string
//! column `id` that the answers carry on. Told from text by its first bytes (`PAR1`), or by
//! `--input-format parquet`, and read a row group at a time: memory stays a row group's.
//!
//! A row is an item: a bad deal, or a null one, is a bad item in its place (`row N: ...`), and
//! the rows after it are read as usual. A file that is not Parquet (cut short, another format)
//! or has no string column `deal` cannot be read at all: the run ends with status 2 and says why.

use std::io::Read;

use arrow_array::cast::AsArray as _;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use bytes::Bytes;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use crate::compressed::PARQUET_MAGIC as MAGIC;
use crate::jobs::store::location::Location;

/// ParquetRows read at a time.
const BATCH_ROWS: usize = 8192;

/// How a run reads its inputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InputFormat {
    /// Parquet when a file begins with Parquet's magic (PAR1), else text (gzip and zstd decoded).
    #[default]
    Auto,
    /// The game's text format.
    Text,
    /// Parquet, with a string column `deal` and an optional string column `id`.
    Parquet,
}

/// A place read as Parquet reads it: ranges from an offset.
struct Chunks {
    place: Location,
    len: u64,
}

impl Length for Chunks {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for Chunks {
    type T = Box<dyn Read + Send>;

    fn get_read(&self, start: u64) -> Result<Self::T, ParquetError> {
        Ok(self.place.open_at(start)?)
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes, ParquetError> {
        let mut bytes = Vec::with_capacity(length);
        self.place
            .open_at(start)?
            .take(length as u64)
            .read_to_end(&mut bytes)?;
        if bytes.len() != length {
            return Err(ParquetError::EOF(format!(
                "{} ends at byte {}, before the {length} bytes from byte {start}",
                self.place,
                start + bytes.len() as u64
            )));
        }
        Ok(Bytes::from(bytes))
    }
}

/// The rows of a Parquet input, one deal's text (and id) at a time.
pub struct ParquetRows {
    reader: ParquetRecordBatchReader,
    batch: Option<RecordBatch>,
    /// The next row of `batch`, and the rows before it.
    at: usize,
    row: u64,
    /// The first row this reader reads (0 but for a shard's), for [`ParquetRows::consumed`].
    first: u64,
    total: u64,
    size: u64,
    with_id: bool,
}

/// Where row `row` of a Parquet input of `rows` rows and `size` bytes stands in its bytes, for
/// `--shard` (whose ranges are bytes) and the progress: the rows spread evenly over the file, the
/// first at its start. Rows have no byte of their own (a row group's columns lie apart, and
/// compressed), so this gives each one, from the footer alone, a place that only grows: the
/// shards' rows then tile the input as text items do, and cut row groups where they must.
pub fn row_at(row: u64, rows: u64, size: u64) -> u64 {
    match rows {
        0 => 0,
        rows => (u128::from(row) * u128::from(size) / u128::from(rows)) as u64,
    }
}

/// The first row whose place ([`row_at`]) is at or past byte `at`: `rows` when none is.
pub fn first_row_from(at: u64, rows: u64, size: u64) -> u64 {
    if size == 0 {
        return rows;
    }
    // row * size / rows >= at (rounded down) holds from row = ceil(at * rows / size) on.
    let row = (u128::from(at) * u128::from(rows)).div_ceil(u128::from(size));
    row.min(u128::from(rows)) as u64
}

/// The rows a Parquet input holds, by its footer (for `--shard`, which counts them without
/// reading them).
pub fn rows_in(place: &Location, size: u64) -> Result<u64, String> {
    let chunks = Chunks {
        place: place.clone(),
        len: size,
    };
    let builder = ParquetRecordBatchReaderBuilder::try_new(chunks)
        .map_err(|e| format!("it is not a Parquet file patience reads ({e})"))?;
    Ok(builder.metadata().file_metadata().num_rows().max(0) as u64)
}

/// One row: its id, and its deal's text (`None`: null).
#[derive(Debug)]
pub struct DealRow {
    pub id: Option<String>,
    pub deal: Option<String>,
}

impl std::fmt::Debug for ParquetRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetRows").finish_non_exhaustive()
    }
}

impl ParquetRows {
    /// Opens the Parquet input at `place` (`size` bytes long): its footer read and its columns
    /// checked. With `span` (a shard's), only rows `span.start..span.end` (counted from 0) are
    /// read, their numbers in messages still the whole file's; only the row groups that hold them
    /// are decoded.
    pub fn open(
        place: &Location,
        size: u64,
        span: Option<std::ops::Range<u64>>,
    ) -> Result<ParquetRows, String> {
        if !place.rereadable() {
            return Err(
                "it is read as Parquet, which is read from its footer at its end: give it \
                        as a file or an object (a pipe, a FIFO or standard input can only be read \
                        from its start)"
                    .into(),
            );
        }
        let chunks = Chunks {
            place: place.clone(),
            len: size,
        };
        let not = |e: ParquetError| format!("it is not a Parquet file patience reads ({e})");
        let builder = ParquetRecordBatchReaderBuilder::try_new(chunks).map_err(not)?;
        let schema = builder.schema().clone();
        let text = |name: &str| {
            schema.field_with_name(name).ok().map(|field| {
                matches!(
                    field.data_type(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                )
            })
        };
        match text("deal") {
            Some(true) => {}
            Some(false) => return Err("its column `deal` is not a string column".into()),
            None => {
                let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                return Err(format!(
                    "it has no column `deal` (its columns: {}): a Parquet input holds one deal \
                     per row in a string column `deal`, and may have a string column `id`",
                    names.join(", ")
                ));
            }
        }
        let with_id = match text("id") {
            Some(false) => return Err("its column `id` is not a string column".into()),
            found => found.is_some(),
        };
        let wanted: Vec<usize> = ["deal", "id"]
            .iter()
            .filter_map(|name| {
                builder
                    .parquet_schema()
                    .columns()
                    .iter()
                    .position(|c| c.name() == *name)
            })
            .collect();
        let mask = ProjectionMask::leaves(builder.parquet_schema(), wanted);
        let total = builder.metadata().file_metadata().num_rows().max(0) as u64;
        let mut builder = builder.with_projection(mask).with_batch_size(BATCH_ROWS);
        let mut first = 0;
        if let Some(span) = span {
            let (groups, selection) = window(builder.metadata().row_groups(), &span);
            first = span.start;
            builder = builder
                .with_row_groups(groups)
                .with_row_selection(selection);
        }
        let reader = builder.build().map_err(not)?;
        Ok(ParquetRows {
            reader,
            batch: None,
            at: 0,
            row: first,
            first,
            total,
            size,
            with_id,
        })
    }

    /// How far past its first row's place the rows read so far reach, in the file's bytes
    /// ([`row_at`]; for the progress).
    pub fn consumed(&self) -> u64 {
        match self.total {
            0 => self.size,
            total => row_at(self.row, total, self.size) - row_at(self.first, total, self.size),
        }
    }

    /// ParquetRows read so far, counted from 1 in messages.
    pub fn row(&self) -> u64 {
        self.row
    }

    /// The next row, or why the file could not be read further.
    pub fn next_row(&mut self) -> Option<Result<DealRow, String>> {
        loop {
            if let Some(batch) = &self.batch
                && self.at < batch.num_rows()
            {
                let at = self.at;
                self.at += 1;
                self.row += 1;
                return Some(Ok(DealRow {
                    deal: text(batch, "deal", at),
                    id: self.with_id.then(|| text(batch, "id", at)).flatten(),
                }));
            }
            match self.reader.next()? {
                Ok(batch) => {
                    self.batch = Some(batch);
                    self.at = 0;
                }
                Err(e) => {
                    return Some(Err(format!(
                        "cannot read its rows from row {} on ({e})",
                        self.row + 1
                    )));
                }
            }
        }
    }
}

/// The row groups that hold rows `span` of a file whose row groups are `groups`, and which of
/// their rows are `span`'s.
fn window(
    groups: &[parquet::file::metadata::RowGroupMetaData],
    span: &std::ops::Range<u64>,
) -> (Vec<usize>, RowSelection) {
    let mut chosen = Vec::new();
    let mut selectors = Vec::new();
    let mut start = 0u64;
    for (i, group) in groups.iter().enumerate() {
        let end = start + group.num_rows().max(0) as u64;
        let (from, to) = (span.start.max(start), span.end.min(end));
        if from < to {
            if chosen.is_empty() && from > start {
                selectors.push(RowSelector::skip((from - start) as usize));
            }
            chosen.push(i);
            selectors.push(RowSelector::select((to - from) as usize));
            if to < end {
                selectors.push(RowSelector::skip((end - to) as usize));
            }
        }
        start = end;
    }
    (chosen, RowSelection::from(selectors))
}

/// The text of column `name` at `row` of `batch`; `None` when null (or not a string column,
/// which [`ParquetRows::open`] has refused).
fn text(batch: &RecordBatch, name: &str, row: usize) -> Option<String> {
    let column = batch.column_by_name(name)?;
    if column.is_null(row) {
        return None;
    }
    let value = match column.data_type() {
        DataType::Utf8 => column.as_string::<i32>().value(row),
        DataType::LargeUtf8 => column.as_string::<i64>().value(row),
        DataType::Utf8View => column.as_string_view().value(row),
        _ => return None,
    };
    Some(value.to_string())
}

/// Whether `place` is read as Parquet: by `format`, or by its first bytes. A place that can be read
/// only once (a pipe) is not looked into: it is read through, and its stream's first bytes refuse
/// Parquet there (`compressed::decoded`).
pub fn is_parquet(place: &Location, format: InputFormat) -> bool {
    match format {
        InputFormat::Text => false,
        InputFormat::Parquet => true,
        InputFormat::Auto => {
            !matches!(place, Location::Stdin)
                && place.first_bytes(4).is_ok_and(|first| first == MAGIC)
        }
    }
}

/// The rows a Parquet file at `place` holds, by its footer; `None` when it is not Parquet (by its
/// first bytes).
pub fn row_count(place: &Location) -> Result<Option<u64>, String> {
    if place.first_bytes(4).map_err(|e| e.to_string())? != MAGIC {
        return Ok(None);
    }
    let builder = ParquetRecordBatchReaderBuilder::try_new(chunks(place)?)
        .map_err(|e| format!("it is not a whole Parquet file ({e})"))?;
    Ok(Some(
        builder.metadata().file_metadata().num_rows().max(0) as u64
    ))
}

/// The answers of a Parquet output patience wrote (a part, for `merge`), a batch at a time.
pub fn answers(place: &Location) -> Result<ParquetRecordBatchReader, String> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(chunks(place)?)
        .map_err(|e| format!("it is not a whole Parquet file ({e})"))?;
    if builder.schema().fields() != crate::render::columns::schema().fields() {
        return Err("its columns are not the answers' (index, id, probability, error)".into());
    }
    builder
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| e.to_string())
}

fn chunks(place: &Location) -> Result<Chunks, String> {
    Ok(Chunks {
        place: place.clone(),
        len: place.size().map_err(|e| e.to_string())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shard ranges of bytes cut any file's rows into runs that tile them in order: each row in
    /// the one range that holds its place, worked by hand for 10 rows in 25 bytes.
    #[test]
    fn rows_placed_in_the_bytes_fall_each_in_one_range() {
        // Places: 0 2 5 7 10 12 15 17 20 22.
        let places: Vec<u64> = (0..10).map(|row| row_at(row, 10, 25)).collect();
        assert_eq!(places, [0, 2, 5, 7, 10, 12, 15, 17, 20, 22]);
        assert_eq!(first_row_from(0, 10, 25), 0);
        assert_eq!(first_row_from(3, 10, 25), 2);
        assert_eq!(first_row_from(5, 10, 25), 2);
        assert_eq!(first_row_from(6, 10, 25), 3);
        assert_eq!(first_row_from(23, 10, 25), 10);
        assert_eq!(first_row_from(25, 10, 25), 10);
        for (rows, size) in [
            (10, 25),
            (7, 3),
            (1, 1000),
            (1000, 1),
            (0, 5),
            (12345, 99991),
        ] {
            for n in 1..12u64 {
                let cut = |k: u64| k * size / n;
                let mut next = 0;
                for k in 0..n {
                    let from = first_row_from(cut(k), rows, size);
                    let to = match k + 1 == n {
                        true => rows,
                        false => first_row_from(cut(k + 1), rows, size),
                    };
                    assert_eq!(from, next, "{rows} rows, {size} bytes, shard {k}/{n}");
                    assert!(from <= to);
                    for row in from..to {
                        let at = row_at(row, rows, size);
                        assert!(at >= cut(k) && (k + 1 == n || at < cut(k + 1)));
                    }
                    next = to;
                }
                assert_eq!(next, rows);
            }
        }
    }
}
