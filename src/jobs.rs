//! Jobs: what `solve`, `rps`, `client`, `merge` and `index` do with inputs and answers, and the
//! jobs a daemon runs, as a library under the command line (`crate::cli` parses the flags, builds
//! a plan, calls in here and prints the outcome; nothing here imports it or knows a flag).
//!
//! One folder per stage, each using only the stages before it (tests/layout.rs holds the order);
//! each stage's module says what comes in and what goes out:
//! - `outcome.rs`: a run's exit status, which every stage may end with;
//! - `store/`: where bytes are (standard input, files, objects) and the records beside them;
//! - `report/`: what a run says about itself on standard error;
//! - `source/`: where items come from (inputs, Parquet rows, batches, shards, the index);
//! - `sink/`: where answers go (the printer, whole lines, uploads, Parquet row groups, resume);
//! - `parts/`: shards' outputs as parts, and `merge`;
//! - `pipeline/`: one run, from its plan to its exit status;
//! - `daemon/`: the jobs a daemon keeps, queues, runs and takes up again.
//!
//! Each file's failures are its own typed error (`thiserror`), the place named once and the cause
//! kept as its source; a local file that an operation failed on is one `store::FileError` whichever
//! module says it; the command line prints the chain, and [`in_full`] says it on one line where
//! the library itself has to (a job's record, a log line, a keeper's last word).

pub mod outcome;

pub mod store;

pub mod report;

pub mod source;

pub mod sink;

pub mod parts;

pub mod pipeline;

pub mod daemon;

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
