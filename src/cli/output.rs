//! What an answer's line looks like, shared by `solve`, `client` and `rps` so that the same
//! answers print the same bytes whoever computed them; and the [`Printer`] that writes them.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::mpsc;

use super::progress::ProgressDisplay;
pub use crate::render::{JsonAnalysis, Render};

/// The outcome of a whole run, as an exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitStatus {
    /// Every deal or case was answered.
    Ok = 0,
    /// Some deal or case (or a case file's framing) was bad; every good one was answered.
    BadInput = 1,
    /// Usage or I/O trouble: some input could not be read at all.
    Trouble = 2,
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        ExitCode::from(s as u8)
    }
}

/// Writes answers' lines in input order, keeping the JSON index and the run's status, for every
/// command that prints answers. It does not care who computed them: `solve` and `rps` feed it from
/// the pool, and a remote path can feed it what daemons answered.
pub struct Printer<'a, W: Write> {
    out: W,
    render: Render,
    progress: &'a ProgressDisplay,
    /// The next line's index: items printed so far, bad ones included.
    index: u64,
    status: ExitStatus,
}

impl<'a, W: Write> Printer<'a, W> {
    pub fn new(out: W, render: Render, progress: &'a ProgressDisplay) -> Self {
        Printer {
            out,
            render,
            progress,
            index: 0,
            status: ExitStatus::Ok,
        }
    }

    /// The next item's line: its probability (and, in JSON, its analysis).
    pub fn solved(&mut self, p: f64, analysis: Option<JsonAnalysis>) -> io::Result<()> {
        let line = self.render.solved(self.index, p, analysis);
        self.line(&line)
    }

    /// The next item's `error:` line; the run will end with [`ExitStatus::BadInput`].
    pub fn failed(&mut self, message: &str) -> io::Result<()> {
        self.status = self.status.max(ExitStatus::BadInput);
        let line = self.render.failed(self.index, message);
        self.line(&line)
    }

    fn line(&mut self, line: &str) -> io::Result<()> {
        self.index += 1;
        writeln!(self.out, "{line}")
    }

    /// Tells the progress bar that `items` more were printed, spanning `at` input bytes in all.
    pub fn advance(&self, items: u64, at: u64) {
        self.progress.advance(items, at);
    }

    /// An input that could not be read (further): said on standard error, after the lines so
    /// far; the run will end with [`ExitStatus::Trouble`].
    pub fn unreadable(&mut self, message: &str) {
        let _ = self.out.flush();
        self.progress.eprintln(format_args!("patience: {message}"));
        self.status = ExitStatus::Trouble;
    }

    /// The next piece from `pieces`, or `None` once its sender is gone. When it would have to
    /// wait, the output is flushed first, so that whoever reads it (someone typing, a pipe) sees
    /// every answer so far.
    pub fn receive<T>(&mut self, pieces: &mpsc::Receiver<T>) -> io::Result<Option<T>> {
        match pieces.try_recv() {
            Ok(piece) => Ok(Some(piece)),
            Err(mpsc::TryRecvError::Disconnected) => Ok(None),
            Err(mpsc::TryRecvError::Empty) => {
                self.out.flush()?;
                Ok(pieces.recv().ok())
            }
        }
    }

    /// Ends the run: flushes, and gives its status.
    pub fn finish(mut self) -> anyhow::Result<ExitStatus> {
        match self.out.flush() {
            Ok(()) => Ok(self.status),
            Err(e) => self.write_failed(e),
        }
    }

    /// Ends the run after a failed write. A closed pipe (`patience solve big | head`) is the
    /// reader's choice, not an error.
    pub fn write_failed(&self, e: io::Error) -> anyhow::Result<ExitStatus> {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Ok(self.status)
        } else {
            Err(anyhow::Error::new(e).context("cannot write the results"))
        }
    }
}

/// The buffer is a locked standard output or a test's vector: nothing worth printing.
impl<W: Write> std::fmt::Debug for Printer<'_, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer")
            .field("index", &self.index)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}
