//! Jobs: what `solve`, `rps`, `client`, `merge` and `index` do with inputs and answers, as a
//! library under the command line (`crate::cli` parses the flags, calls in here and prints the
//! outcome; nothing here imports it).
//!
//! - where bytes are: a name becomes standard input, a file or an object in one place
//!   (`location.rs`); objects are object_store's (`object.rs`: S3, and memory for the tests),
//!   uploaded in parts (`multipart.rs`); the records beside an output are read and written one
//!   way (`record.rs`);
//! - where items come from: the inputs named (`input.rs`; gzip and zstd by their bytes,
//!   `crate::compressed`, which the HTTP API's bodies share; Parquet rows, `parquet_in.rs`),
//!   read into batches (`batches.rs`), `--shard`'s share of them (`shard.rs`) and the index that lets a shard skip
//!   what comes before it (`index.rs`);
//! - where answers go: the printer in input order (`output.rs`), standard output or `--output`
//!   in whole lines (`sink.rs`; an object's multipart upload, `upload.rs`; a Parquet file's rows,
//!   `parquet_out.rs`), `--resume` (`resume.rs`)
//!   and the run record beside the output (`run_record.rs`), a part's lock and completion record (`part.rs`) and
//!   `merge` of the parts (`merge.rs`);
//! - the run: what the three answering commands share (`job.rs`), the in-process pipeline of
//!   `solve` and `rps` (`local.rs`), the progress bar and log lines (`progress.rs`) and their
//!   words (`report.rs`);
//! - jobs the daemon runs: what one reads and writes, checked against `--jobs-dir` (`spec.rs`),
//!   and the daemon's queue of them, run on its pool and taken up again after a restart
//!   (`board.rs`).
//!
//! Each file's failures are its own typed error (`thiserror`), the place named once and the cause
//! kept as its source; a local file that an operation failed on is one [`FileError`] whichever
//! module says it; the command line prints the chain, and [`in_full`] says it on one line where
//! the library itself has to (a job's record, a log line, a keeper's last word).

pub mod batches;
pub mod beneath;
pub mod board;
mod file_error;
pub mod index;
pub mod input;
pub mod job;
pub mod local;
pub mod location;
pub mod merge;
pub mod multipart;
pub mod object;
pub mod output;
pub mod parquet_in;
pub mod parquet_out;

pub mod part;
pub mod plan;
pub mod progress;
pub mod record;
pub mod report;
pub mod resume;
pub mod run_record;
pub mod shard;
pub mod signals;
pub mod sink;
pub mod spec;
pub mod upload;

pub use file_error::{FileError, FileOp};

#[cfg(test)]
mod in_memory;

/// `error` and its causes on one line, each after a colon as it says itself: `cannot write
/// out.parquet: No space left on device (os error 28)`. The words the command line prints of a
/// failed run, for the places that keep or log them themselves (a job's record, the daemon's log,
/// a Parquet output's last word on a signal).
pub fn in_full(error: &dyn std::error::Error) -> String {
    let mut said = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        said.push_str(": ");
        said.push_str(&cause.to_string());
        next = cause.source();
    }
    said
}
