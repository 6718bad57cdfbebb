//! The [`Printer`] that writes answers' lines in input order for `solve`, `client` and `rps`, and
//! the run's exit status. What a line looks like is `crate::render`'s, shared with the daemon's
//! plain HTTP API, so that the same answers are the same bytes wherever they are printed.

use crate::jobs::outcome::ExitStatus;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;

use super::lines::Sink;
use super::run_record::Resume;
use crate::jobs::report::progress::Progress;
use crate::ordered;
pub use crate::render::{JsonAnalysis, Render};

/// Why a run's answers could not all be printed: the output could not be written, or a resumed
/// output holds more answers than the input has items.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(
        "cannot resume {}: it holds {kept} answers, but the input has only {read} {noun} (was it \
         written for other inputs?); it is left as it was",
        .path.display()
    )]
    InputShort {
        path: PathBuf,
        kept: u64,
        read: u64,
        noun: &'static str,
    },
    #[error("cannot write the results")]
    Write(#[source] io::Error),
}

/// Writes answers' lines in input order, keeping the JSON index, the run's status and its counts,
/// for every command that prints answers. It does not care who computed them: `solve` and `rps`
/// feed it from the pool, `client` what daemons answered. Resuming, it is told of the inputs read
/// again and not answered ([`Printer::skipped`]), and its first line is the first new one.
pub struct Printer<'a> {
    out: Sink,
    render: Render,
    progress: &'a Progress,
    /// The next line's index: items so far, bad ones and those already in the output included.
    index: u64,
    status: ExitStatus,
    /// `error:` lines since the progress was last told.
    bad: u64,
    /// The output file being resumed, and how many of its answers the input has had so far.
    resume: Option<Resume>,
    skipped: u64,
    /// Each item's id, in order, when an input has them (Parquet): the JSON lines and the Parquet
    /// rows carry them.
    ids: Option<Receiver<Option<String>>>,
}

impl<'a> Printer<'a> {
    /// A printer whose first line is item `first` of the whole input (a shard's first; else 0),
    /// after the answers a resumed file holds.
    pub fn new(
        out: Sink,
        render: Render,
        progress: &'a Progress,
        resume: Option<Resume>,
        first: u64,
    ) -> Self {
        Printer {
            out,
            render,
            progress,
            index: first + resume.as_ref().map_or(0, |r| r.kept),
            status: ExitStatus::Ok,
            bad: 0,
            resume,
            skipped: 0,
            ids: None,
        }
    }

    /// Items' ids come in order from `ids` (the reader of a Parquet input), one per item.
    pub fn with_ids(mut self, ids: Option<Receiver<Option<String>>>) -> Self {
        self.ids = ids;
        self
    }

    /// The next item's id, if it has one.
    fn next_id(&mut self) -> Option<String> {
        self.ids
            .as_ref()
            .and_then(|ids| ids.try_recv().ok().flatten())
    }

    /// The next item's line: its probability (and, in JSON, its analysis).
    pub fn solved(&mut self, p: f64, analysis: Option<JsonAnalysis>) -> io::Result<()> {
        let id = self.next_id();
        let written = match &mut self.out {
            Sink::Columns(table) => table.solved(self.index, id.as_deref(), p),
            out => match id {
                Some(id) => writeln!(
                    out,
                    "{}",
                    self.render.solved_with_id(self.index, &id, p, analysis)
                ),
                None => self.render.write_solved(out, self.index, p, analysis),
            },
        };
        self.index += 1;
        written
    }

    /// The next item's `error:` line; the run will end with [`ExitStatus::BadInput`].
    pub fn failed(&mut self, message: &str) -> io::Result<()> {
        self.status = self.status.max(ExitStatus::BadInput);
        self.bad += 1;
        let index = self.index;
        self.index += 1;
        let id = self.next_id();
        match &mut self.out {
            Sink::Columns(table) => table.failed(index, id.as_deref(), message),
            out => writeln!(
                out,
                "{}",
                self.render.failed_with_id(index, id.as_deref(), message)
            ),
        }
    }

    /// Tells the progress that `items` more were printed, spanning `at` input bytes in all.
    pub fn advance(&mut self, items: u64, at: u64) {
        self.progress
            .advance(items, std::mem::take(&mut self.bad), at);
    }

    /// `items` inputs read again whose answers the output file holds already (`bad` of them
    /// bad, which the exit status says as an uninterrupted run's would), spanning `at` bytes.
    pub fn skipped(&mut self, items: u64, bad: u64, at: u64) {
        self.skipped += items;
        if bad > 0 {
            self.status = self.status.max(ExitStatus::BadInput);
        }
        self.progress.skipped(items, bad, at);
    }

    /// An input that could not be read (further): said on standard error, after the lines so
    /// far; the run will end with [`ExitStatus::Trouble`].
    pub fn unreadable(&mut self, message: &str) {
        let _ = self.out.flush();
        self.progress.unreadable(message);
        self.status = ExitStatus::Trouble;
    }

    /// Hands the answers so far to whoever reads them: before waiting, so that someone typing,
    /// or a pipe, sees every answer so far.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Ends the run: everything flushed (and the output file's partial last line, if a resume
    /// found one, cut off), and its status. A resume whose input ran out before the answers the
    /// file holds is refused here, the file left as it was.
    pub fn finish(self) -> Result<ExitStatus, OutputError> {
        if let Some(resume) = &self.resume
            && self.skipped < resume.kept
        {
            return Err(OutputError::InputShort {
                path: resume.path.clone(),
                kept: resume.kept,
                read: self.skipped,
                noun: self.progress.counts().noun,
            });
        }
        let status = self.status;
        match self.out.finish() {
            Ok(()) => Ok(status),
            Err(e) => write_failed(e, status),
        }
    }

    /// Ends the run after a failed write. A closed pipe (`patience solve big | head`) is the
    /// reader's choice, not an error.
    pub fn write_failed(&self, e: io::Error) -> Result<ExitStatus, OutputError> {
        write_failed(e, self.status)
    }
}

fn write_failed(e: io::Error, status: ExitStatus) -> Result<ExitStatus, OutputError> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Ok(status)
    } else {
        Err(OutputError::Write(e))
    }
}

/// A [`Printer`] as the ordered pipeline's sink ([`crate::ordered`]): `print` writes an answer's
/// line, in the terms of whoever computed it (the pool's results, the daemons' answers).
pub struct Printing<'p, F> {
    pub printer: Printer<'p>,
    pub print: F,
}

impl<F> std::fmt::Debug for Printing<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printing").finish_non_exhaustive()
    }
}

impl<'p, A, F> ordered::AnswerSink<A> for Printing<'p, F>
where
    F: FnMut(&mut Printer<'p>, A) -> io::Result<()>,
{
    fn answer(&mut self, answer: A) -> io::Result<()> {
        (self.print)(&mut self.printer, answer)
    }

    fn bad(&mut self, message: &str) -> io::Result<()> {
        self.printer.failed(message)
    }

    fn advance(&mut self, items: u64, at: u64) {
        self.printer.advance(items, at);
    }

    fn skipped(&mut self, items: u64, bad: u64, at: u64) {
        self.printer.skipped(items, bad, at);
    }

    fn unreadable(&mut self, message: &str) {
        self.printer.unreadable(message);
    }

    /// Buffered: handed on only before the pipeline waits.
    fn flush(&mut self, waiting: bool) -> impl Future<Output = io::Result<()>> + Send {
        std::future::ready(if waiting {
            self.printer.flush()
        } else {
            Ok(())
        })
    }
}

/// The output is a locked standard output or a file: nothing worth printing.
impl std::fmt::Debug for Printer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer")
            .field("index", &self.index)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::in_full;

    /// The printer's failures in the words they have always had (written out here by hand, as
    /// the format strings before the errors were typed said them).
    #[test]
    fn output_errors_say_what_they_always_said() {
        let short = OutputError::InputShort {
            path: "out.txt".into(),
            kept: 12,
            read: 10,
            noun: "deals",
        };
        assert_eq!(
            in_full(&short),
            "cannot resume out.txt: it holds 12 answers, but the input has only 10 deals (was it \
             written for other inputs?); it is left as it was"
        );
        let full = OutputError::Write(io::Error::from(io::ErrorKind::StorageFull));
        assert_eq!(in_full(&full), "cannot write the results: no storage space");
    }
}
