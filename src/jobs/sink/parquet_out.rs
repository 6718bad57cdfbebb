//! `--format parquet --output NAME.parquet` (a file or an `s3://` object): the answers as one
//! Parquet file whose row groups are written as the run goes (memory stays flat), which a kill at
//! any moment leaves resumable.
//!
//! A Parquet file only becomes readable when its footer (the metadata of every row group) is at
//! its end, and appending a row group overwrites the footer. So the row groups' metadata is kept
//! beside the file as well: after each row group is in the file and synced, one line with its
//! metadata and the byte where it ends is appended to `NAME.resume.groups` (`groups.rs`) and
//! synced; the run record (`NAME.resume.json`) is written once, at the start. A resume cuts the
//! file where the log's last whole line says and goes on, the new row groups' offsets shifted past
//! the kept ones; a run that ends, or stops on SIGINT or SIGTERM, writes the footer at the file's
//! end. A SIGKILL loses the row group being gathered: at most `layout::ROW_GROUP_ROWS` answers, or
//! [`CHECKPOINT_EVERY`] of a slow run. A record written before the log held the whole footer
//! (rewritten at every row group: quadratic bytes); it still resumes.
//!
//! An object is the same bytes as a multipart upload (`upload.rs`): row groups gather in memory
//! until they make a part, and each part uploaded is recorded with the checkpoint of the row
//! groups it ends with (the footer so far, in the upload's record, which an object store cannot
//! append to); the footer goes in the last part, which completes the object. A signal ends such a
//! run as it ends a text upload: the parts uploaded stay, for `--resume`.

mod groups;
mod keeper;
mod layout;
mod tail;
mod written;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use arrow_schema::ArrowError;
use parquet::arrow::ArrowWriter;
use parquet::errors::ParquetError;
use parquet::file::metadata::RowGroupMetaData;

use groups::{GroupLog, Logged};
pub use layout::{FooterError, write_whole};
use layout::{Layout, moved};
use tail::Gathered;
pub use written::write_answers;

use super::run_record::{self, Checkpoint, Record, Resume, RunRecordError};
use super::signals::{Keeper, Tell};
use super::tail::{FileTail, Tail};
use super::upload::ObjectTail;
use crate::compressed::PARQUET_MAGIC as MAGIC;
use crate::jobs::in_full;
use crate::jobs::store::beneath::{self, How};
use crate::jobs::store::location::Location;
use crate::jobs::store::record::{self, RecordError};
use crate::jobs::store::{FileError, FileOp};
use crate::render::columns::{self, Rows};

/// Answers gathered before the writer takes them: always this many at a time (the pages' bounds
/// depend on the batches, so a run's bytes do not depend on when the printer waited), and the
/// rest when a row group is ended.
const BATCH_ROWS: usize = 8192;
/// A slow run (a far daemon, a trickle on standard input) still ends a row group this often.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(10);
/// How often the keeper looks at the clock.
const TICK: Duration = Duration::from_secs(1);

/// Why a Parquet output cannot be opened, checkpointed or ended: the output named once where the
/// words name it, the storage's or Parquet's error as the cause.
#[derive(Debug, thiserror::Error)]
pub enum ParquetOutError {
    /// A local file the operation failed on.
    #[error(transparent)]
    File(#[from] FileError),
    /// Shorter than its checkpoint, or not Parquet at all.
    #[error(
        "cannot resume {}: it is not the Parquet file its record describes ({len} bytes, where \
         the record has {rows} answers in its first {end} bytes); leave out --resume to start \
         again",
        .path.display()
    )]
    NotAsRecorded {
        path: PathBuf,
        len: u64,
        rows: u64,
        end: u64,
    },
    /// An object's upload record whose parts and footer disagree.
    #[error(
        "cannot resume {url}: its upload record's parts hold {kept} answers, which its Parquet \
         footer does not describe; leave out --resume to start again"
    )]
    PartsNotFooter { url: String, kept: u64 },
    #[error("its record's footer")]
    KeptFooter(#[source] FooterError),
    #[error("no checkpoint")]
    NoCheckpoint,
    #[error("the output is complete already")]
    Complete,
    #[error(transparent)]
    Footer(#[from] FooterError),
    #[error(transparent)]
    RunRecord(#[from] RunRecordError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Parquet(#[from] ParquetError),
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The output and its keeper.
pub struct ParquetAnswers {
    shared: Arc<Mutex<Writing>>,
    keeper: Keeper,
}

impl std::fmt::Debug for ParquetAnswers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetAnswers").finish_non_exhaustive()
    }
}

/// The writer and the output's bookkeeping, behind the lock the printer and the keeper share.
struct Writing {
    rows: Rows,
    writer: ArrowWriter<Gathered>,
    /// The output (`None` once completed).
    to: Option<Box<dyn Tail>>,
    /// The run record; an object's holds the checkpoint of the row groups written so far.
    record: Record,
    /// Every row group recorded (a resume's kept ones first), at its place in the output; the
    /// answers in them, and the byte where they end.
    groups: Vec<RowGroupMetaData>,
    recorded_rows: u64,
    end: u64,
    /// A file's log of its row groups (`groups.rs`).
    log: Option<GroupLog>,
    /// Where this run's row groups start minus where the writer thinks they do (after its
    /// magic): 0 for a new output.
    shift: i64,
    /// The writer's row groups recorded, whether a checkpoint was made yet, and when the last
    /// was.
    recorded: usize,
    checkpointed: bool,
    last: Instant,
    layout: Layout,
}

/// Opens the file `output` for this run: created anew with its record, or, with `resume` and a
/// record of this run with row groups logged, checked against them and kept up to them.
pub fn open(
    output: &Path,
    resume: bool,
    record: &Record,
    tell: Tell,
) -> Result<(ParquetAnswers, Resume), ParquetOutError> {
    let place = Location::File(output.to_path_buf());
    let held = match resume {
        true => held(output, record)?,
        false => None,
    };
    let mut record = record.clone();
    record.checkpoint = None;
    let layout = Layout::new()?;
    let failed = |op, source| {
        ParquetOutError::File(FileError {
            op,
            path: output.to_path_buf(),
            source,
        })
    };
    let (gathered, tail, kept) = match held {
        None => {
            record::forget(&place)?;
            record::write(&record::resume_of(&place), &record)?;
            let tail = FileTail::create(output, None).map_err(|e| failed(FileOp::Create, e))?;
            (Gathered::new(0), tail, Logged::default())
        }
        Some(logged) => {
            let mut file =
                beneath::open(output, How::ReadWrite).map_err(|e| failed(FileOp::Open, e))?;
            let len = file.metadata()?.len();
            let mut magic = [0u8; 4];
            let starts = io::Read::read_exact(&mut file, &mut magic).is_ok() && &magic == MAGIC;
            if len < logged.end || !starts {
                return Err(ParquetOutError::NotAsRecorded {
                    path: output.to_path_buf(),
                    len,
                    rows: logged.rows,
                    end: logged.end,
                });
            }
            record::forget(&place)?;
            // This run's record (a record that held the footer itself is one no more).
            record::write(&record::resume_of(&place), &record)?;
            let tail = FileTail::open(file, output, None, Some((logged.end, logged.rows)));
            (Gathered::new(MAGIC.len()), tail, logged)
        }
    };
    let log = GroupLog::start(output, &kept, &layout)?;
    let resume = Resume {
        path: output.to_path_buf(),
        kept: kept.rows,
    };
    let table = Writing::new(gathered, Box::new(tail), record, kept, layout)?;
    let table = Writing {
        log: Some(log),
        ..table
    };
    let answers = ParquetAnswers::start(table, tell)?;
    Ok((answers, resume))
}

/// What `output` holds by its record and its groups' log (or, written before the log, the footer
/// its record held) when it was written as this run writes; `None` when it holds nothing yet (a
/// new run).
fn held(output: &Path, ours: &Record) -> Result<Option<Logged>, ParquetOutError> {
    let place = Location::File(output.to_path_buf());
    if !place.exists()? {
        return Ok(None);
    }
    let theirs = run_record::read_record(&place)?;
    ours.same_run(&theirs, &place)?;
    let len = beneath::metadata(output).map_or(0, |m| m.len());
    let logged = match (groups::read(output, len)?, theirs.checkpoint) {
        (Some(logged), _) => logged,
        (None, Some(checkpoint)) => logged_at(&checkpoint)?,
        (None, None) => return Ok(None),
    };
    // A log with no checkpoint in it: the run ended before its first.
    Ok((logged.end > 0).then_some(logged))
}

/// The row groups a checkpoint's footer holds.
fn logged_at(checkpoint: &Checkpoint) -> Result<Logged, ParquetOutError> {
    Ok(Logged {
        groups: checkpoint
            .row_groups()
            .map_err(ParquetOutError::KeptFooter)?,
        rows: checkpoint.rows,
        end: checkpoint.end,
    })
}

/// This run's answers as Parquet into `object`, an upload opened (and, resumed, checked against
/// `record`) by `upload::open`, whose `kept` answers are in the parts uploaded.
pub fn into_object(
    object: ObjectTail,
    kept: u64,
    record: &Record,
    tell: Tell,
) -> Result<(ParquetAnswers, Resume), ParquetOutError> {
    let url = object.url().to_string();
    let mut record = record.clone();
    record.checkpoint = match kept {
        0 => None,
        _ => object.record().checkpoint.clone(),
    };
    let (swallow, logged) = match &record.checkpoint {
        Some(checkpoint) if checkpoint.rows == kept => (MAGIC.len(), logged_at(checkpoint)?),
        None if kept == 0 => (0, Logged::default()),
        _ => return Err(ParquetOutError::PartsNotFooter { url, kept }),
    };
    let table = Writing::new(
        Gathered::new(swallow),
        Box::new(object),
        record,
        logged,
        Layout::new()?,
    )?;
    // As a text upload: a signal ends the run, and the parts uploaded stay for a resume.
    let answers = ParquetAnswers::start(table, tell)?;
    let resume = Resume {
        path: url.into(),
        kept,
    };
    Ok((answers, resume))
}

impl Writing {
    /// The writer of a run that goes on after `kept` (nothing, for a new output; its magic then
    /// comes from the writer).
    fn new(
        gathered: Gathered,
        to: Box<dyn Tail>,
        record: Record,
        kept: Logged,
        layout: Layout,
    ) -> Result<Writing, ParquetOutError> {
        let shift = match kept.end {
            0 => 0,
            end => end as i64 - MAGIC.len() as i64,
        };
        let writer =
            ArrowWriter::try_new(gathered, columns::schema(), Some(layout.properties.clone()))?;
        Ok(Writing {
            rows: Rows::with_capacity(BATCH_ROWS),
            writer,
            to: Some(to),
            record,
            groups: kept.groups,
            recorded_rows: kept.rows,
            end: kept.end,
            log: None,
            shift,
            recorded: 0,
            checkpointed: false,
            last: Instant::now(),
            layout,
        })
    }

    /// Records the row groups written: synced to the file, then the new ones' line appended to
    /// its log; or handed to the upload with the footer of every one so far. With `end`, the row
    /// group being gathered is ended and written first (else it stays in memory, to grow to its
    /// full size).
    fn checkpoint(&mut self, end: bool) -> Result<(), ParquetOutError> {
        self.last = Instant::now();
        if end {
            self.hand_over()?;
            self.writer.flush()?;
        }
        let flushed = self.writer.flushed_row_groups().len();
        if flushed == self.recorded && self.checkpointed {
            return Ok(());
        }
        // Through the writer's buffer to the tail.
        self.writer.sync()?;
        let mut new = Vec::with_capacity(flushed - self.recorded);
        for group in &self.writer.flushed_row_groups()[self.recorded..] {
            let ordinal = (self.groups.len() + new.len()) as i32;
            new.push(moved(group, self.shift, ordinal)?);
        }
        let rows: u64 = new.iter().map(|g| g.num_rows().max(0) as u64).sum();
        // The writer counts its own magic, which a resume swallowed: the shift makes up for it.
        let end = (self.shift + self.writer.bytes_written() as i64) as u64;
        let total = self.recorded_rows + rows;
        let Some(to) = self.to.as_mut() else {
            return Err(ParquetOutError::Complete);
        };
        let bytes = std::mem::take(&mut self.writer.inner_mut().bytes);
        match &mut self.log {
            // The row groups' bytes first, synced, then their line in the log.
            Some(log) => {
                to.append(&bytes, rows)?;
                to.keep()?;
                log.append(&new, total, end, &self.layout)?;
                self.groups.extend(new);
            }
            // No log beside the output: the footer so far goes with the bytes.
            None => {
                self.groups.extend(new);
                let checkpoint = self.layout.checkpoint(self.groups.clone(), end)?;
                self.record.checkpoint = Some(checkpoint.clone());
                to.checkpoint(checkpoint);
                to.append(&bytes, rows)?;
                to.keep()?;
            }
        }
        self.recorded_rows = total;
        self.end = end;
        self.recorded = flushed;
        self.checkpointed = true;
        Ok(())
    }

    /// The output's name, as the keeper's messages say it.
    fn name(&self) -> String {
        self.to
            .as_ref()
            .map_or_else(|| "the output".to_string(), |to| to.name())
    }

    /// The rows gathered go to the writer (which writes a row group that is full).
    fn hand_over(&mut self) -> Result<(), ParquetOutError> {
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

    /// The last checkpoint, then its footer at the output's end: a whole Parquet file (an object
    /// completed). The answers it holds.
    fn close(&mut self) -> Result<u64, ParquetOutError> {
        self.checkpoint(true)?;
        let (footer, rows) = self.layout.footer(self.groups.clone())?;
        let mut to = self.to.take().ok_or(ParquetOutError::Complete)?;
        if self.log.is_none() {
            let checkpoint = self
                .record
                .checkpoint
                .clone()
                .ok_or(ParquetOutError::NoCheckpoint)?;
            to.checkpoint(checkpoint);
        }
        // Where the last checkpoint ended: the footer follows the last row group.
        to.append(&footer, 0)?;
        to.finish()?;
        Ok(rows)
    }
}

impl ParquetAnswers {
    /// Starts the keeper; where the output answers signals (a file), it also writes the footer on
    /// SIGINT and SIGTERM.
    fn start(table: Writing, tell: Tell) -> Result<ParquetAnswers, ParquetOutError> {
        let signals = table.to.as_ref().is_some_and(|to| to.answers_signals());
        let shared = Arc::new(Mutex::new(table));
        let keeper = {
            let shared = shared.clone();
            Keeper::start(signals, move |stopped, signals| {
                keeper::keep(shared, stopped, tell, signals)
            })?
        };
        Ok(ParquetAnswers { shared, keeper })
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

    /// Everything answered is in the output, which ends with its footer.
    pub fn finish(mut self) -> io::Result<()> {
        self.keeper.stop();
        lock(&self.shared)
            .close()
            .map(drop)
            .map_err(|e| io::Error::other(in_full(&e)))
    }
}

/// However the run ends, what was handed over is recorded (the output stays resumable; only a
/// finished run writes the footer, so that a run that failed is not taken for a whole one).
impl Drop for ParquetAnswers {
    fn drop(&mut self) {
        self.keeper.stop();
        let mut table = lock(&self.shared);
        if table.to.is_some() {
            let _ = table.checkpoint(true);
        }
    }
}

fn lock(shared: &Mutex<Writing>) -> MutexGuard<'_, Writing> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run record of a Parquet output of deals.
    fn parquet_record() -> Record {
        Record::new(
            "deals",
            crate::render::OutputFormat::Parquet,
            6,
            crate::solver::Options::default(),
            &crate::jobs::source::input::Input::from_args(&[PathBuf::from("deals.in")]),
        )
    }

    /// Writes answers `from..to` into `output` (resumed when `from` > 0), ended by a drop, as a
    /// killed run's printer leaves them; the answers the resume kept.
    fn write_some(output: &Path, from: u64, to: u64) -> u64 {
        let tell: Tell = Box::new(|_| {});
        let (mut answers, resume) = open(output, from > 0, &parquet_record(), tell).unwrap();
        for index in resume.kept..to {
            answers.solved(index, None, 0.5).unwrap();
        }
        drop(answers);
        resume.kept
    }

    /// A resume keeps the row groups its log holds up to the first line cut short by a kill or
    /// reaching past the file's end, and a record of the footer itself (before the log) resumes
    /// too; each checkpoint adds one line, the record is not rewritten.
    #[test]
    fn a_resume_keeps_the_row_groups_logged_up_to_a_cut_or_false_line() {
        let dir = std::env::temp_dir().join(format!("patience-groups-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let output = dir.join("out.parquet");
        let log = groups::log_of(&output);
        let record_at = record::resume_of(&Location::File(output.clone()));
        assert_eq!(write_some(&output, 0, 10), 0);
        let record_bytes = std::fs::read(record_at.file().unwrap()).unwrap();
        assert_eq!(write_some(&output, 1, 15), 10);
        assert_eq!(write_some(&output, 1, 21), 15);
        let lines = std::fs::read_to_string(&log).unwrap();
        assert_eq!(lines.lines().count(), 2, "{lines}");
        assert!(
            lines.starts_with("15 ") && lines.contains("\n21 "),
            "{lines}"
        );
        assert_eq!(
            std::fs::read(record_at.file().unwrap()).unwrap(),
            record_bytes
        );
        // A line cut short by a kill is not taken.
        let mut cut = lines.clone().into_bytes();
        cut.extend_from_slice(b"30 99999 AAAA");
        std::fs::write(&log, &cut).unwrap();
        assert_eq!(write_some(&output, 1, 22), 21);
        // A line past the file's end is not taken: the file cut back to before its last group.
        let lines = std::fs::read_to_string(&log).unwrap();
        let second: u64 = lines
            .lines()
            .nth(1)
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&output)
            .unwrap();
        file.set_len(second - 1).unwrap();
        assert_eq!(write_some(&output, 1, 23), 21);
        // A record written before the log, holding the footer of the groups itself.
        let logged = groups::read(&output, u64::MAX).unwrap().unwrap();
        let layout = Layout::new().unwrap();
        let mut old = parquet_record();
        old.checkpoint = Some(layout.checkpoint(logged.groups, logged.end).unwrap());
        record::write(&record_at, &old).unwrap();
        std::fs::remove_file(&log).unwrap();
        assert_eq!(write_some(&output, 1, 24), 23);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A Parquet output's failures in the words they have always had (written out here by hand,
    /// as the format strings before the errors were typed said them), each cause after them once.
    #[test]
    fn parquet_output_errors_say_what_they_always_said() {
        let cases: Vec<(ParquetOutError, &str)> = vec![
            (
                ParquetOutError::File(FileError {
                    op: FileOp::Create,
                    path: "out.parquet".into(),
                    source: io::Error::from(io::ErrorKind::PermissionDenied),
                }),
                "cannot create out.parquet: permission denied",
            ),
            (
                ParquetOutError::NotAsRecorded {
                    path: "out.parquet".into(),
                    len: 100,
                    rows: 131072,
                    end: 2048,
                },
                "cannot resume out.parquet: it is not the Parquet file its record describes (100 \
                 bytes, where the record has 131072 answers in its first 2048 bytes); leave out \
                 --resume to start again",
            ),
            (
                ParquetOutError::PartsNotFooter {
                    url: "s3://answers/out.parquet".into(),
                    kept: 7,
                },
                "cannot resume s3://answers/out.parquet: its upload record's parts hold 7 \
                 answers, which its Parquet footer does not describe; leave out --resume to start \
                 again",
            ),
            (
                ParquetOutError::KeptFooter(FooterError::Short),
                "its record's footer: too short to be a Parquet footer",
            ),
            (ParquetOutError::NoCheckpoint, "no checkpoint"),
            (ParquetOutError::Complete, "the output is complete already"),
        ];
        for (error, said) in cases {
            assert_eq!(in_full(&error), said);
        }
    }
}
