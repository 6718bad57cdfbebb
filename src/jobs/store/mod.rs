//! Stage 1, the store: where bytes are, and the small records kept beside what is written.
//!
//! - Comes in: a name as a user gives it (a path, `-`, an `s3://` URL), or a job's place.
//! - Goes out: a [`location::Location`] that opens, sizes, reads, writes and removes the same way
//!   whether it is standard input, a file or an object; every local file of a daemon's jobs
//!   reached beneath `--jobs-dir` (`beneath.rs`); objects through object_store (`object.rs`, its
//!   failures in words in `object/words.rs`), uploaded in parts (`multipart.rs`); one
//!   [`FileError`] for a local file an operation failed on; the records beside an output, read
//!   and written one way (`record.rs`).

pub mod beneath;
mod file_error;
pub mod location;
pub mod multipart;
pub mod object;
pub mod record;

pub use file_error::{FileError, FileOp};
