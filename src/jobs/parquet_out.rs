//! `--format parquet --output NAME.parquet`: the answers as one Parquet file whose row groups are
//! written as the run goes (memory stays flat), which a kill at any moment leaves resumable.
//!
//! A Parquet file only becomes readable when its footer (the metadata of every row group) is at
//! its end, and appending a row group overwrites the footer. So the footer lives in the run record
//! too (`NAME.resume.json`, [`Checkpoint`]): after each row group is in the file and synced, the
//! record is rewritten with the footer of every row group so far and the byte where they end. A
//! resume cuts the file there and goes on, the new row groups' offsets shifted past the kept ones;
//! a run that ends, or stops on SIGINT or SIGTERM, writes the footer at the file's end. A SIGKILL
//! loses the row group being gathered: at most [`ROW_GROUP_ROWS`] answers, or
//! [`CHECKPOINT_EVERY`] of a slow run.
//!
//! The record grows with the row groups (about 0.5 KB each, base64), and is rewritten whole at
//! each: 10^8 answers make 763 row groups and a record of 0.4 MB at the end.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek as _, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter, add_encoded_arrow_schema_to_metadata};
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::{
    FileMetaData, KeyValue, ParquetMetaData, ParquetMetaDataOptions, ParquetMetaDataReader,
    ParquetMetaDataWriter, RowGroupMetaData,
};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::SchemaDescPtr;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use super::location::Location;
use super::record;
use super::resume::{Record, Resume};
use super::sink::{Signals, Tell};
use crate::columns::{self, Rows};

/// Answers the printer gathers before the writer takes them (a lock and an encoding step each).
const BATCH_ROWS: usize = 8192;
/// Answers per row group: also what a SIGKILL loses at most. About a second of `solve` on two
/// cores, and DuckDB's own row group size (122,880) rounded up to a power of two.
pub const ROW_GROUP_ROWS: usize = 131_072;
/// A slow run (a far daemon, a trickle on standard input) still ends a row group this often.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(10);
/// How often the keeper looks at the clock.
const TICK: Duration = Duration::from_secs(1);
/// Parquet's magic, at both ends of a file.
const MAGIC: &[u8; 4] = b"PAR1";

/// What a Parquet output holds so far, kept in its run record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Answers in the row groups recorded.
    pub rows: u64,
    /// The byte where the last recorded row group ends: where the footer goes.
    pub end: u64,
    /// The footer (metadata, its length and the magic) for those row groups, in base64.
    pub footer: String,
}

/// The output file and its keeper.
pub struct ParquetAnswers {
    shared: Arc<Mutex<Table>>,
    stop: Option<oneshot::Sender<()>>,
    keeper: Option<JoinHandle<()>>,
}

/// The writer and the file's bookkeeping, behind the lock the printer and the keeper share.
struct Table {
    /// Answers not yet handed to the writer: always [`BATCH_ROWS`] at a time (the pages' bounds
    /// depend on the batches, so a run's bytes do not depend on when the printer waited), and the
    /// rest when a row group is ended.
    rows: Rows,
    writer: ArrowWriter<Tail>,
    path: PathBuf,
    /// The run record, rewritten with each checkpoint.
    record: Record,
    /// Row groups a resume kept, at their places in the file.
    kept: Vec<RowGroupMetaData>,
    /// Where this run's row groups start minus where the writer thinks they do (after its
    /// magic): 0 for a new file.
    shift: i64,
    /// Row groups recorded at the last checkpoint, and when it was.
    recorded: usize,
    last: Instant,
    schema: SchemaDescPtr,
    key_values: Option<Vec<KeyValue>>,
    version: i32,
}

/// The file as the writer sees it: a resume swallows the writer's leading magic (the file has
/// one) and cuts the file to its kept row groups before the first byte it writes.
struct Tail {
    file: File,
    swallow: usize,
    cut: Option<u64>,
}

impl Write for Tail {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.swallow > 0 {
            let n = self.swallow.min(buf.len());
            self.swallow -= n;
            return Ok(n);
        }
        self.make_cut()?;
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Tail {
    fn make_cut(&mut self) -> io::Result<()> {
        if let Some(len) = self.cut.take() {
            self.file.set_len(len)?;
            self.file.seek(SeekFrom::Start(len))?;
        }
        Ok(())
    }
}

/// Opens `output` for this run: created anew with its record, or, with `resume` and a record
/// that holds a checkpoint, checked against the record and kept up to it.
pub fn open(
    output: &Path,
    resume: bool,
    record: &Record,
    tell: Tell,
) -> anyhow::Result<(ParquetAnswers, Resume)> {
    let shown = output.display();
    let place = Location::File(output.to_path_buf());
    let held = match resume {
        true => held(&place, record)?,
        false => None,
    };
    let mut record = record.clone();
    let (table, kept_rows) = match held {
        None => {
            record::forget(&place)?;
            record.checkpoint = None;
            record::write(&record::resume_of(&place), &record)?;
            let file = File::create(output).with_context(|| format!("cannot create {shown}"))?;
            let tail = Tail {
                file,
                swallow: 0,
                cut: None,
            };
            (Table::new(tail, output, record, Vec::new(), 0)?, 0)
        }
        Some(checkpoint) => {
            let kept = decode(&checkpoint.footer)
                .with_context(|| format!("cannot resume {shown}: its record's footer"))?;
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(output)
                .with_context(|| format!("cannot open {shown}"))?;
            let len = file.metadata()?.len();
            let mut magic = [0u8; 4];
            let starts = io::Read::read_exact(&mut file, &mut magic).is_ok() && &magic == MAGIC;
            if len < checkpoint.end || !starts {
                bail!(
                    "cannot resume {shown}: it is not the Parquet file its record describes \
                     ({} bytes, where the record has {} answers in its first {} bytes); leave \
                     out --resume to start again",
                    len,
                    checkpoint.rows,
                    checkpoint.end
                );
            }
            record::forget(&place)?;
            let tail = Tail {
                file,
                swallow: MAGIC.len(),
                cut: Some(checkpoint.end),
            };
            let shift = checkpoint.end as i64 - MAGIC.len() as i64;
            let rows = checkpoint.rows;
            record.checkpoint = Some(checkpoint);
            let table = Table::new(tail, output, record, kept.row_groups().to_vec(), shift)?;
            (table, rows)
        }
    };
    let answers = ParquetAnswers::start(table, tell)?;
    let resume = Resume {
        path: output.to_path_buf(),
        kept: kept_rows,
    };
    Ok((answers, resume))
}

/// The checkpoint of `output`'s record when it was written as this run writes; `None` when it
/// holds nothing yet (a new run).
fn held(place: &Location, ours: &Record) -> anyhow::Result<Option<Checkpoint>> {
    if !place.exists()? {
        return Ok(None);
    }
    let theirs = super::resume::read_record(place)?;
    if let Some((theirs, ours)) = ours.differences(&theirs) {
        bail!(
            "cannot resume {place}: it was written with {theirs}, where this run has {ours}; give \
             the same flags and inputs to go on with it, or another --output (or leave out \
             --resume) to start again"
        );
    }
    Ok(theirs.checkpoint)
}

/// A footer's metadata, from its base64.
fn decode(footer: &str) -> anyhow::Result<ParquetMetaData> {
    let bytes = BASE64.decode(footer)?;
    let Some(metadata) = bytes.len().checked_sub(8).map(|end| &bytes[..end]) else {
        bail!("too short to be a Parquet footer");
    };
    // Every field as it was (encoding statistics as a list, not the mask readers prefer), so that
    // the footer written again is the footer recorded.
    let options = ParquetMetaDataOptions::new().with_encoding_stats_as_mask(false);
    Ok(ParquetMetaDataReader::decode_metadata_with_options(
        metadata,
        Some(&options),
    )?)
}

impl Table {
    fn new(
        tail: Tail,
        path: &Path,
        record: Record,
        kept: Vec<RowGroupMetaData>,
        shift: i64,
    ) -> anyhow::Result<Table> {
        let arrow = columns::schema();
        let key_values = vec![KeyValue::new(
            columns::ENGINE_KEY.to_string(),
            columns::engine(),
        )];
        let mut props = properties(Some(key_values));
        add_encoded_arrow_schema_to_metadata(&arrow, &mut props);
        let key_values = props.key_value_metadata().cloned();
        let version = props.writer_version().as_num();
        let schema = Arc::new(ArrowSchemaConverter::new().convert(&arrow)?);
        let writer = ArrowWriter::try_new(tail, arrow, Some(props))?;
        Ok(Table {
            rows: Rows::with_capacity(BATCH_ROWS),
            writer,
            path: path.to_path_buf(),
            record,
            kept,
            shift,
            recorded: 0,
            last: Instant::now(),
            schema,
            key_values,
            version,
        })
    }

    /// Syncs the row groups written and records the footer of every one so far; with `end`, the
    /// row group being gathered is ended and written first (else it stays in memory, to grow to
    /// its full size).
    fn checkpoint(&mut self, end: bool) -> anyhow::Result<()> {
        self.last = Instant::now();
        if end {
            self.hand_over()?;
            self.writer.flush()?;
        }
        let flushed = self.writer.flushed_row_groups().len();
        if flushed == self.recorded && self.record.checkpoint.is_some() {
            return Ok(());
        }
        // Through the writer's buffer and the resume's cut, to the disk.
        self.writer.sync()?;
        self.writer.inner_mut().make_cut()?;
        self.writer.inner().file.sync_data()?;
        let metadata = self.metadata()?;
        let mut footer = Vec::new();
        ParquetMetaDataWriter::new(&mut footer, &metadata)
            .with_preserve_page_index_locations(false)
            .finish()?;
        // The writer counts its own magic, which a resume swallowed: the shift makes up for it.
        let end = self.shift + self.writer.bytes_written() as i64;
        self.record.checkpoint = Some(Checkpoint {
            rows: metadata.file_metadata().num_rows() as u64,
            end: end as u64,
            footer: BASE64.encode(&footer),
        });
        let place = Location::File(self.path.clone());
        record::write(&record::resume_of(&place), &self.record)?;
        self.recorded = flushed;
        Ok(())
    }

    /// The rows gathered go to the writer (which writes a row group that is full).
    fn hand_over(&mut self) -> anyhow::Result<()> {
        if !self.rows.is_empty() {
            self.writer.write(&self.rows.batch()?)?;
        }
        Ok(())
    }

    /// Hands a full batch to the writer, and records a row group the writer wrote.
    fn gathered(&mut self) -> io::Result<()> {
        if self.rows.len() < BATCH_ROWS {
            return Ok(());
        }
        self.hand_over().map_err(io::Error::other)?;
        if self.writer.flushed_row_groups().len() > self.recorded {
            self.checkpoint(false).map_err(io::Error::other)?;
        }
        Ok(())
    }

    /// The footer's metadata: the kept row groups, then this run's, moved to where they are.
    fn metadata(&self) -> Result<ParquetMetaData, ParquetError> {
        let mut groups = self.kept.clone();
        for group in self.writer.flushed_row_groups() {
            let ordinal = groups.len() as i32;
            groups.push(moved(group, self.shift, ordinal)?);
        }
        let rows = groups.iter().map(RowGroupMetaData::num_rows).sum();
        let file = FileMetaData::new(
            self.version,
            rows,
            Some(columns::engine()),
            self.key_values.clone(),
            self.schema.clone(),
            None,
        );
        Ok(ParquetMetaData::new(file, groups))
    }

    /// The last checkpoint, then its footer at the file's end: a whole Parquet file.
    fn close(&mut self) -> anyhow::Result<u64> {
        self.checkpoint(true)?;
        let checkpoint = self.record.checkpoint.as_ref().context("no checkpoint")?;
        let footer = BASE64.decode(&checkpoint.footer)?;
        let tail = self.writer.inner_mut();
        tail.make_cut()?;
        tail.file.seek(SeekFrom::Start(checkpoint.end))?;
        tail.file.write_all(&footer)?;
        tail.file.set_len(checkpoint.end + footer.len() as u64)?;
        tail.file.sync_data()?;
        Ok(checkpoint.rows)
    }
}

/// The writer's settings: zstd (level 1: a few per cent of the answers' size, at memory speed),
/// no dictionaries for the numbers (each index and most probabilities are distinct), statistics
/// per column chunk only (page statistics would go in a page index, which the footer written
/// here does not carry), and row groups of [`ROW_GROUP_ROWS`].
fn properties(key_values: Option<Vec<KeyValue>>) -> WriterProperties {
    let zstd = ZstdLevel::try_new(1).map_or(Compression::SNAPPY, Compression::ZSTD);
    WriterProperties::builder()
        .set_compression(zstd)
        .set_created_by(columns::engine())
        .set_key_value_metadata(key_values)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_offset_index_disabled(true)
        .set_column_dictionary_enabled("index".into(), false)
        .set_column_dictionary_enabled("probability".into(), false)
        .build()
}

/// `group` with its offsets moved `shift` bytes on, as row group `ordinal`.
fn moved(
    group: &RowGroupMetaData,
    shift: i64,
    ordinal: i32,
) -> Result<RowGroupMetaData, ParquetError> {
    let mut builder = group.clone().into_builder();
    let columns = builder
        .take_columns()
        .into_iter()
        .map(|column| {
            let data = column.data_page_offset() + shift;
            let dictionary = column.dictionary_page_offset().map(|at| at + shift);
            let index = column.index_page_offset().map(|at| at + shift);
            column
                .into_builder()
                .set_data_page_offset(data)
                .set_dictionary_page_offset(dictionary)
                .set_index_page_offset(index)
                .build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    builder = builder.set_column_metadata(columns).set_ordinal(ordinal);
    if let Some(at) = group.file_offset() {
        builder = builder.set_file_offset(at + shift);
    }
    builder.build()
}

impl ParquetAnswers {
    fn start(table: Table, tell: Tell) -> anyhow::Result<ParquetAnswers> {
        let shared = Arc::new(Mutex::new(table));
        let (stop, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // Watched from here on, as the text output's keeper does (`sink.rs`).
        let signals = {
            let _context = runtime.enter();
            Signals::new()
        };
        let keeper = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("output".into())
                .spawn(move || runtime.block_on(keep(shared, stopped, tell, signals)))?
        };
        Ok(ParquetAnswers {
            shared,
            stop: Some(stop),
            keeper: Some(keeper),
        })
    }

    /// Item `index`, solved.
    pub fn solved(&mut self, index: u64, id: Option<&str>, p: f64) -> io::Result<()> {
        let mut table = lock(&self.shared);
        table.rows.solved(index, id, p);
        table.gathered()
    }

    /// Item `index`, bad.
    pub fn failed(&mut self, index: u64, id: Option<&str>, message: &str) -> io::Result<()> {
        let mut table = lock(&self.shared);
        table.rows.failed(index, id, message);
        table.gathered()
    }

    /// Everything answered is in the file, which ends with its footer.
    pub fn finish(mut self) -> io::Result<()> {
        self.stop_keeper();
        lock(&self.shared)
            .close()
            .map(drop)
            .map_err(io::Error::other)
    }

    fn stop_keeper(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(keeper) = self.keeper.take() {
            let _ = keeper.join();
        }
    }
}

/// However the run ends, what was handed over is recorded (the file stays resumable; only a
/// finished run writes the footer, so that a run that failed is not taken for a whole one).
impl Drop for ParquetAnswers {
    fn drop(&mut self) {
        self.stop_keeper();
        let _ = lock(&self.shared).checkpoint(true);
    }
}

fn lock(shared: &Mutex<Table>) -> MutexGuard<'_, Table> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The keeper: a row group ended every [`CHECKPOINT_EVERY`] at the latest; on SIGINT or SIGTERM,
/// the footer written and the process ended.
async fn keep(
    shared: Arc<Mutex<Table>>,
    mut stopped: oneshot::Receiver<()>,
    tell: Tell,
    mut signals: Signals,
) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            _ = tick.tick() => {
                let mut table = lock(&shared);
                if table.last.elapsed() >= CHECKPOINT_EVERY
                    && (table.writer.in_progress_rows() > 0 || !table.rows.is_empty())
                    && let Err(e) = table.checkpoint(true)
                {
                    tell(format!("patience: cannot write {}: {e:#}", table.path.display()));
                    return;
                }
            }
            signal = signals.next() => interrupted(lock(&shared), signal, &tell),
        }
    }
}

/// Writes the footer and ends the process as the signal would have, saying how to go on.
#[allow(
    clippy::exit,
    reason = "a signal ends the run wherever the printer is; the lock held keeps it from writing \
              after the footer"
)]
fn interrupted(mut table: MutexGuard<'_, Table>, (name, number): (&str, i32), tell: &Tell) {
    let path = table.path.display().to_string();
    match table.close() {
        Ok(rows) => tell(format!(
            "patience: {name}: stopped with {rows} answers in {path}; the same command with \
             --resume goes on from there"
        )),
        Err(e) => tell(format!("patience: {name}: cannot write {path}: {e:#}")),
    }
    std::process::exit(128 + number);
}

/// Writes `parts`' answers, in order, as one Parquet file into `out` (`merge`), with the
/// properties and metadata of a run's own output.
pub fn write_whole<W: Write + Send>(
    out: W,
    parts: impl IntoIterator<
        Item = anyhow::Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader>,
    >,
) -> anyhow::Result<()> {
    let key_values = vec![KeyValue::new(
        columns::ENGINE_KEY.to_string(),
        columns::engine(),
    )];
    let mut writer =
        ArrowWriter::try_new(out, columns::schema(), Some(properties(Some(key_values))))?;
    for part in parts {
        for batch in part? {
            writer.write(&batch?)?;
        }
    }
    writer.close()?;
    Ok(())
}
