//! Where the answers go as lines: standard output, or an output's [`Tail`] (a file, an object),
//! written so that what the output holds is always a correct prefix of the whole answer, whatever
//! ends the process.
//!
//! The tail gets whole lines only: bytes wait here until their line is complete, so a line is
//! never split between two appends (and a process killed mid-write leaves at most a partial last
//! line in a file, which `--resume` cuts off). Complete lines go to the tail when the printer is
//! about to wait (as standard output does), when 64 KiB are pending, and, from a thread of their
//! own (the *keeper*), at least every second whatever the printer is doing, kept there (a file
//! synced). A tail that answers signals (a file) has its keeper write what is complete on SIGINT
//! or SIGTERM, keep it, say how many answers the output holds and end the process (status 130 or
//! 143); a SIGKILL loses at most the last second.

use std::io::{self, BufWriter, StdoutLock, Write};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

use super::parquet_out::ParquetAnswers;
use super::signals::{Keeper, Signals, Tell};
use super::tail::Tail;

/// How often complete lines reach the file at the latest.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Pending bytes that make a write without waiting for the timer.
const PENDING_MAX: usize = 64 << 10;

/// The answers' destination, as the printer writes to it.
pub enum Sink {
    Stdout(BufWriter<StdoutLock<'static>>),
    /// `--output NAME` in lines, a file's or an object's.
    Lines(AnswerLines),
    /// `--format parquet --output NAME.parquet` (`parquet_out.rs`): rows, not lines; the printer
    /// hands it each answer, and writing bytes to it is refused.
    Columns(Box<ParquetAnswers>),
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").finish_non_exhaustive()
    }
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
            Sink::Lines(lines) => lines.finish(),
            Sink::Columns(table) => table.finish(),
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Stdout(out) => out.write(buf),
            Sink::Lines(lines) => lines.write(buf),
            Sink::Columns(_) => Err(not_lines()),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout(out) => out.write_all(buf),
            Sink::Lines(lines) => lines.write_all(buf),
            Sink::Columns(_) => Err(not_lines()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::Lines(lines) => lines.flush(),
            // Rows are handed on in whole batches and row groups (`parquet_out.rs`).
            Sink::Columns(_) => Ok(()),
        }
    }
}

fn not_lines() -> io::Error {
    io::Error::other("a Parquet output takes rows, not lines")
}

/// The output's tail and its keeper.
pub struct AnswerLines {
    shared: Arc<Mutex<Unwritten>>,
    keeper: Keeper,
}

impl std::fmt::Debug for AnswerLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerLines").finish_non_exhaustive()
    }
}

/// The tail and the bytes not yet in it, behind the lock the printer and the keeper share.
struct Unwritten {
    tail: Box<dyn Tail>,
    bytes: Vec<u8>,
}

impl Unwritten {
    /// Appends every complete pending line: all at once, or one by one to a tail that takes
    /// them so ([`Tail::line_by_line`]).
    fn write_complete(&mut self) -> io::Result<()> {
        let Some(end) = memchr::memrchr(b'\n', &self.bytes) else {
            return Ok(());
        };
        let complete = &self.bytes[..=end];
        if self.tail.line_by_line() {
            for line in complete.split_inclusive(|&b| b == b'\n') {
                self.tail.append(line, 1)?;
            }
        } else {
            let lines = memchr::memchr_iter(b'\n', complete).count() as u64;
            self.tail.append(complete, lines)?;
        }
        self.bytes.drain(..=end);
        Ok(())
    }

    /// Appends what is complete and keeps it.
    fn keep(&mut self) -> io::Result<()> {
        self.write_complete()?;
        self.tail.keep()
    }
}

impl AnswerLines {
    /// Lines into `tail`, kept by a keeper of their own; `tell` says what the keeper has to.
    pub fn start(tail: Box<dyn Tail>, tell: Tell) -> io::Result<AnswerLines> {
        let signals = tail.answers_signals();
        let shared = Arc::new(Mutex::new(Unwritten {
            tail,
            bytes: Vec::new(),
        }));
        let keeper = {
            let shared = shared.clone();
            Keeper::start(signals, move |stopped, signals| {
                keep(shared, stopped, tell, signals)
            })?
        };
        Ok(AnswerLines { shared, keeper })
    }

    fn lock(&self) -> MutexGuard<'_, Unwritten> {
        lock(&self.shared)
    }

    /// Ends the run's writing: everything written so far is in the output, which is completed (a
    /// file synced, with a partial last line found by a resume cut off even if nothing new was
    /// written; an object's upload completed).
    pub fn finish(mut self) -> io::Result<()> {
        self.keeper.stop();
        let mut pending = self.lock();
        pending.write_complete()?;
        let tail = std::mem::replace(&mut pending.tail, Box::new(Finished));
        tail.finish()
    }
}

impl Write for AnswerLines {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut pending = self.lock();
        pending.bytes.extend_from_slice(buf);
        if pending.bytes.len() >= PENDING_MAX {
            pending.write_complete()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.lock().write_complete()
    }
}

/// However the run ends (an error, a panic unwinding), the complete lines reach the output and
/// are kept there (an object's upload is not completed: its parts stay, for `--resume`).
impl Drop for AnswerLines {
    fn drop(&mut self) {
        self.keeper.stop();
        let _ = self.lock().keep();
    }
}

/// The tail of an output already completed.
struct Finished;

impl Tail for Finished {
    fn append(&mut self, _bytes: &[u8], _items: u64) -> io::Result<()> {
        Err(io::Error::other("the output is complete already"))
    }

    fn keep(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn items(&self) -> u64 {
        0
    }

    fn finish(self: Box<Self>) -> io::Result<()> {
        Ok(())
    }

    fn name(&self) -> String {
        "the output".to_string()
    }

    fn answers_signals(&self) -> bool {
        false
    }
}

fn lock(shared: &Mutex<Unwritten>) -> MutexGuard<'_, Unwritten> {
    // A writer that panicked left whole lines and pending bytes, both still good to write.
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The keeper: complete lines to the tail every [`FLUSH_EVERY`], kept; on SIGINT or SIGTERM
/// (where the tail answers them), the last of them and the end of the process.
async fn keep(
    shared: Arc<Mutex<Unwritten>>,
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
                let mut pending = lock(&shared);
                if let Err(e) = pending.keep() {
                    // The printer's next write meets the same trouble and ends the run with it.
                    tell(format!("patience: cannot write {}: {e}", pending.tail.name()));
                    return;
                }
            }
            signal = signals.next() => {
                interrupted(lock(&shared), signal, &tell);
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
fn interrupted(mut pending: MutexGuard<'_, Unwritten>, (name, number): (&str, i32), tell: &Tell) {
    let written = pending.keep();
    let path = pending.tail.name();
    match written {
        Ok(()) => tell(format!(
            "patience: {name}: stopped with {} answers in {path}; the same command with \
             --resume goes on from there",
            pending.tail.items()
        )),
        Err(e) => tell(format!("patience: {name}: cannot write {path}: {e}")),
    }
    std::process::exit(128 + number);
}
