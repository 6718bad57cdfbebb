//! Where the answers go: standard output, or the `--output` file, written so that what is on disk
//! is always a correct prefix of the whole answer, whatever ends the process.
//!
//! The file gets whole lines only: bytes wait here until their line is complete, so a line is
//! never split between two writes (and a process killed mid-write leaves at most a partial last
//! line, which `--resume` cuts off). Complete lines go to the file when the printer is about to
//! wait (as standard output does), when 64 KiB are pending, and, from a thread of their own (the
//! *keeper*), at least every second whatever the printer is doing, with the data synced to disk.
//! On SIGINT or SIGTERM the keeper writes what is complete, syncs, says how many answers the file
//! holds and ends the process (status 130 or 143); a SIGKILL loses at most the last second.

use std::fs::File;
use std::io::{self, BufWriter, Seek as _, SeekFrom, StdoutLock, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

use super::parquet_out::ParquetAnswers;
use super::signals::{Keeper, Signals, Tell};
use super::upload::ObjectAnswers;
use crate::compressed::{Codec, Encoded};
use crate::jobs::store::beneath::{self, How};

/// How often complete lines reach the file at the latest.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Pending bytes that make a write without waiting for the timer.
const PENDING_MAX: usize = 64 << 10;

/// The answers' destination, as the printer writes to it.
pub enum Sink {
    Stdout(BufWriter<StdoutLock<'static>>),
    File(AnswerFile),
    /// `--output s3://BUCKET/KEY` (`upload.rs`).
    Object(Box<ObjectAnswers>),
    /// `--format parquet --output NAME.parquet` (`parquet_out.rs`): rows, not lines; the printer
    /// hands it each answer, and writing bytes to it is refused.
    Columns(Box<ParquetAnswers>),
}

impl Sink {
    pub fn stdout() -> Sink {
        Sink::Stdout(BufWriter::new(io::stdout().lock()))
    }

    /// Everything written reaches its destination; a file resumed loses the partial last line
    /// it was found with, even when nothing new was written.
    pub fn finish(self) -> io::Result<()> {
        match self {
            Sink::Stdout(mut out) => out.flush(),
            Sink::File(file) => file.finish(),
            Sink::Object(object) => object.finish(),
            Sink::Columns(table) => table.finish(),
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Stdout(out) => out.write(buf),
            Sink::File(file) => file.write(buf),
            Sink::Object(object) => object.write(buf).map(|()| buf.len()),
            Sink::Columns(_) => Err(not_lines()),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout(out) => out.write_all(buf),
            Sink::File(file) => file.write_all(buf),
            Sink::Object(object) => object.write(buf),
            Sink::Columns(_) => Err(not_lines()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::File(file) => file.flush(),
            // Parts go when they are whole; the record beside the object says what is in.
            Sink::Object(_) => Ok(()),
            // Rows are handed on in whole batches and row groups (`parquet_out.rs`).
            Sink::Columns(_) => Ok(()),
        }
    }
}

fn not_lines() -> io::Error {
    io::Error::other("a Parquet output takes rows, not lines")
}

/// The `--output` file and its keeper.
pub struct AnswerFile {
    shared: Arc<Mutex<FileLines>>,
    keeper: Keeper,
}

/// The file and the bytes not yet in it, behind the lock the printer and the keeper share.
struct FileLines {
    /// The file, written plain or as compressed members (`--output NAME.gz`, `NAME.zst`).
    file: Encoded<File>,
    path: PathBuf,
    pending: Vec<u8>,
    /// Resuming: the length of the complete lines kept, to cut the file to before anything is
    /// appended (a partial last line goes). Not done at once, so that a resume refused once the
    /// input is read leaves the file as it found it.
    cut: Option<u64>,
    /// Complete lines in the file: those kept and those written since.
    lines: u64,
    /// Written since the last sync.
    unsynced: bool,
}

impl FileLines {
    /// Writes every complete pending line (and makes the resume's cut first).
    fn write_complete(&mut self) -> io::Result<()> {
        let Some(end) = self.pending.iter().rposition(|&b| b == b'\n') else {
            return Ok(());
        };
        self.make_cut()?;
        let complete = &self.pending[..=end];
        self.file.write_all(complete)?;
        self.lines += complete.iter().filter(|&&b| b == b'\n').count() as u64;
        self.pending.drain(..=end);
        self.unsynced = true;
        Ok(())
    }

    fn make_cut(&mut self) -> io::Result<()> {
        if let Some(len) = self.cut.take() {
            let file = self.file.end_member()?;
            file.set_len(len)?;
            file.seek(SeekFrom::Start(len))?;
        }
        Ok(())
    }

    /// Closes the compressed member written since the last sync, if any, so that the file
    /// decodes whole up to here, and syncs.
    fn sync(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.unsynced) {
            self.file.end_member()?.sync_data()?;
        }
        Ok(())
    }
}

impl AnswerFile {
    /// A file created (or emptied) for a new run.
    pub fn create(path: &Path, tell: Tell) -> io::Result<AnswerFile> {
        let file = beneath::open(path, How::Create)?;
        AnswerFile::start(file, path, None, 0, tell)
    }

    /// An existing file whose first `lines` lines (`len` bytes) are kept; what follows them is
    /// cut off before the first new line is written, or by [`AnswerFile::finish`].
    pub fn resume(path: &Path, len: u64, lines: u64, tell: Tell) -> io::Result<AnswerFile> {
        let file = beneath::open(path, How::Write)?;
        AnswerFile::start(file, path, Some(len), lines, tell)
    }

    fn start(
        file: File,
        path: &Path,
        cut: Option<u64>,
        lines: u64,
        tell: Tell,
    ) -> io::Result<AnswerFile> {
        let codec = Codec::for_name(&path.to_string_lossy());
        let shared = Arc::new(Mutex::new(FileLines {
            file: Encoded::new(codec, file),
            path: path.to_path_buf(),
            pending: Vec::new(),
            cut,
            lines,
            unsynced: false,
        }));
        let keeper = {
            let shared = shared.clone();
            Keeper::start(true, move |stopped, signals| {
                keep(shared, stopped, tell, signals)
            })?
        };
        Ok(AnswerFile { shared, keeper })
    }

    fn lock(&self) -> MutexGuard<'_, FileLines> {
        lock(&self.shared)
    }

    /// Ends the run's writing: everything written so far is in the file and synced, and a
    /// partial last line found by a resume is cut off even if nothing new was written.
    pub fn finish(mut self) -> io::Result<()> {
        self.keeper.stop();
        let mut lines = self.lock();
        lines.make_cut()?;
        lines.write_complete()?;
        lines.sync()
    }
}

impl Write for AnswerFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut lines = self.lock();
        lines.pending.extend_from_slice(buf);
        if lines.pending.len() >= PENDING_MAX {
            lines.write_complete()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.lock().write_complete()
    }
}

/// However the run ends (an error, a panic unwinding), the complete lines reach the file.
impl Drop for AnswerFile {
    fn drop(&mut self) {
        self.keeper.stop();
        let mut lines = self.lock();
        let _ = lines.write_complete();
        let _ = lines.sync();
    }
}

fn lock(shared: &Mutex<FileLines>) -> MutexGuard<'_, FileLines> {
    // A writer that panicked left whole lines and pending bytes, both still good to write.
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The keeper: complete lines to the file every [`FLUSH_EVERY`], synced; on SIGINT or SIGTERM,
/// the last of them and the end of the process.
async fn keep(
    shared: Arc<Mutex<FileLines>>,
    mut stopped: oneshot::Receiver<()>,
    tell: Tell,
    mut signals: Signals,
) {
    let mut tick = tokio::time::interval(FLUSH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            _ = tick.tick() => {
                let mut lines = lock(&shared);
                if let Err(e) = lines.write_complete().and_then(|()| lines.sync()) {
                    // The printer's next write meets the same trouble and ends the run with it.
                    tell(format!("patience: cannot write {}: {e}", lines.path.display()));
                    return;
                }
            }
            signal = signals.next() => {
                let lines = lock(&shared);
                interrupted(lines, signal, &tell);
            }
        }
    }
}

/// Writes what is complete and ends the process as the signal would have, saying how to go on.
#[allow(
    clippy::exit,
    reason = "a signal ends the run wherever the printer is; the lock held keeps it from writing \
              after the last complete line"
)]
fn interrupted(mut lines: MutexGuard<'_, FileLines>, (name, number): (&str, i32), tell: &Tell) {
    let written = lines.write_complete().and_then(|()| lines.sync());
    let path = lines.path.display();
    match written {
        Ok(()) => tell(format!(
            "patience: {name}: stopped with {} answers in {path}; the same command with \
             --resume goes on from there",
            lines.lines
        )),
        Err(e) => tell(format!("patience: {name}: cannot write {path}: {e}")),
    }
    std::process::exit(128 + number);
}
