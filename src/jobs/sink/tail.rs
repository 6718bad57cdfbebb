//! The one seam between a format and the place it writes: a [`Tail`], whole items appended in
//! order and kept, with a file ([`FileTail`], `tail/file.rs`) and an object (`ObjectTail`,
//! `upload.rs`) behind it. The lines (`lines.rs`), the Parquet row groups (`parquet_out.rs`) and a
//! merged whole (`merge`) each write to a `Box<dyn Tail>`, and only the opener, which has the
//! output's [`Location`], chose which: no format asks whether it writes to a file or an object.

mod file;

use std::io::{self, Write};

pub use file::FileTail;

use super::run_record::Checkpoint;
use crate::jobs::store::location::Location;
use crate::jobs::store::multipart::WholeUpload;

/// The end of an output that a run appends to.
pub trait Tail: Send {
    /// Takes `bytes`, which end `items` whole items (lines, or rows of row groups); `0` for bytes
    /// that are not counted (a footer, a merged whole).
    fn append(&mut self, bytes: &[u8], items: u64) -> io::Result<()>;

    /// What describes the output once the bytes appended next are in (a Parquet output's footer
    /// so far): an object records it with the part that holds them, since it cannot be appended
    /// to later; a file keeps its own log beside it (`parquet_out/groups.rs`) and ignores it.
    fn checkpoint(&mut self, _checkpoint: Checkpoint) {}

    /// What was appended survives a kill from here on: a file's compressed member is closed and
    /// its data synced; an object's parts go as they fill (`upload.rs`), so it has nothing to do.
    fn keep(&mut self) -> io::Result<()>;

    /// The items it holds: those a resume kept and those appended since.
    fn items(&self) -> u64;

    /// Completes it: a file synced (and, written whole, renamed over its name), an object's
    /// upload completed. Only now does a whole output show.
    fn finish(self: Box<Self>) -> io::Result<()>;

    /// Whether lines are appended one by one: an object's are, so that a part is uploaded as
    /// soon as the lines in it reach its size (never more than one line past it), and the lines
    /// after them wait for the next.
    fn line_by_line(&self) -> bool {
        false
    }

    /// Its name, as the messages about it say it.
    fn name(&self) -> String;

    /// Whether it ends the run with SIGINT and SIGTERM itself (a file, synced first), or leaves
    /// them to end the process (an object: the parts uploaded stay, for `--resume`).
    fn answers_signals(&self) -> bool;
}

/// A writer of `place`'s whole content that shows only once [`Tail::finish`] says it is complete
/// (`merge`'s output): a file is written beside it (`NAME.merging`), synced and renamed over it;
/// an object is a multipart upload in parts of `part_size`. Dropped unfinished, an earlier file
/// or object of the name stays as it was.
pub fn whole(place: &Location, part_size: usize) -> io::Result<Box<dyn Tail>> {
    match place {
        Location::Stdin => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "standard input cannot be written",
        )),
        Location::File(path) => Ok(Box::new(FileTail::whole(path)?)),
        Location::Object(url) => Ok(Box::new(WholeObject {
            upload: WholeUpload::create(url, part_size)?,
            name: url.to_string(),
        })),
    }
}

/// A tail as a plain writer (for writers that take one: Parquet's, `io::copy`), its bytes not
/// counted as items.
pub struct Appending<'a>(pub &'a mut dyn Tail);

impl std::fmt::Debug for Appending<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appending").finish_non_exhaustive()
    }
}

impl Write for Appending<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.append(buf, 0)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `merge`'s object: not resumable (a failed merge is run again), so no record beside it.
struct WholeObject {
    upload: WholeUpload,
    name: String,
}

impl Tail for WholeObject {
    fn append(&mut self, bytes: &[u8], _items: u64) -> io::Result<()> {
        self.upload.write_all(bytes)
    }

    fn keep(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn items(&self) -> u64 {
        0
    }

    fn finish(self: Box<Self>) -> io::Result<()> {
        self.upload.finish()
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn answers_signals(&self) -> bool {
        false
    }
}
