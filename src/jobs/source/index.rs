//! `patience index`: a prior pass over large input files, so that `--shard` need not frame them.
//!
//! Without an index, shard K frames every byte before its range to number its items: the last
//! shard reads the whole input. `FILE.index.json` holds FILE's steps (answer lines) and, every
//! `--every` bytes (8 MiB), the mark of the first step at or past it (`crate::items::Mark`) with
//! the steps before it. A shard then skips a file wholly before its range (it adds the file's
//! steps) and starts framing the file its range begins in at the last mark before the range, so
//! it reads its share and at most `--every` bytes more. An index is used only while FILE has the
//! size and modification time recorded in it, and only for the game it was made for; a file
//! that stops being text is not indexed (its shards frame it, and the one whose range holds the
//! line says why).

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use super::input::{Input, Reader};
use crate::deal::DealReader;
use crate::items::Items;
use crate::jobs::outcome::ExitStatus;
use crate::jobs::store::beneath;
use crate::jobs::store::location::{Location, beside};
use crate::jobs::store::record::{self, RecordError, Versioned};
use crate::jobs::store::{FileError, FileOp};
use crate::mark::{Framed, Mark};
use crate::rps::CaseReader;

/// The index's layout; another version is not used.
const VERSION: u32 = 1;

/// Why `patience index` could not index a file: the file named once, the storage's error as the
/// cause.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A local file the operation failed on.
    #[error(transparent)]
    File(#[from] FileError),
    /// A step that is not one of the game's: the shards frame the file, and the one whose range
    /// holds it says why.
    #[error(
        "cannot index {}: it stops being a file of {answers} in the step at byte {at} (`patience \
         solve` on it says why); its shards frame it instead",
        .path.display()
    )]
    NotItems {
        path: PathBuf,
        answers: String,
        at: u64,
    },
    /// A pipe, a FIFO or a device: an index is of a file read again later, from its marks.
    #[error(
        "cannot index {}: {why}; an index marks where a file's steps begin, for reading it again \
         from there: save it to a file and index that",
        .path.display()
    )]
    NotAFile { path: PathBuf, why: io::Error },
    #[error("cannot index {}: it changed while it was read", .path.display())]
    Changed { path: PathBuf },
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("cannot write to standard output")]
    Stdout(#[source] io::Error),
}

/// What `patience index` is asked to do.
#[derive(Clone, Debug)]
pub struct IndexPlan {
    /// The files are rock-paper-scissors case files, not deal files.
    pub cases: bool,
    /// Bytes between two marks: a shard reads at most this much past its share.
    pub every: u64,
    /// The files to index; each gets FILE.index.json beside it.
    pub files: Vec<PathBuf>,
}

/// A mark, with the steps of the file before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Indexed {
    pub offset: u64,
    pub line: u64,
    pub item: u64,
    pub count: Option<u64>,
    pub steps: u64,
}

/// What `FILE.index.json` holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    pub version: u32,
    /// `deals` or `cases`.
    pub answers: String,
    /// FILE as it was indexed.
    pub size: u64,
    pub modified: (u64, u32),
    /// FILE's steps in all, and the marks in file order (the first step's first).
    pub steps: u64,
    pub marks: Vec<Indexed>,
}

impl Index {
    /// The last mark at or before byte `offset` of the file, with the steps before it (the file's
    /// start when there is none).
    pub fn before(&self, offset: u64) -> (Mark, u64) {
        let at = self.marks.partition_point(|m| m.offset <= offset);
        match at.checked_sub(1).and_then(|i| self.marks.get(i)) {
            None => (Mark::default(), 0),
            Some(m) => {
                let mark = Mark {
                    offset: m.offset,
                    line: m.line,
                    item: m.item,
                    count: m.count,
                };
                (mark, m.steps)
            }
        }
    }
}

impl Versioned for Index {
    const VERSION: u32 = VERSION;
    const WHAT: &'static str = "an index";
}

/// Where `file`'s index lives.
fn index_path(file: &Path) -> Location {
    Location::File(beside(file, ".index.json"))
}

/// `file`'s size and modification time, as an index records them.
fn stamp(file: &Path) -> Result<(u64, (u64, u32)), IndexError> {
    let meta = beneath::metadata(file).map_err(|source| {
        IndexError::File(FileError {
            op: FileOp::Read,
            path: file.to_path_buf(),
            source,
        })
    })?;
    if !meta.is_file() {
        return Err(IndexError::NotAFile {
            path: file.to_path_buf(),
            why: crate::jobs::store::location::not_a_file(&meta.file_type()),
        });
    }
    let modified = meta
        .modified()
        .ok()
        .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
        .map_or((0, 0), |d| (d.as_secs(), d.subsec_nanos()));
    Ok((meta.len(), modified))
}

/// `file`'s index for `answers`, if it has one that fits the file as it is now.
pub fn load(file: &Path, answers: &str) -> Option<Index> {
    // An index of another version, or none that reads, is not used: the shards frame the file.
    let index: Index = record::read(&index_path(file)).ok()??;
    let (size, modified) = stamp(file).ok()?;
    (index.answers == answers && index.size == size && index.modified == modified).then_some(index)
}

pub fn run(args: &IndexPlan) -> Result<ExitStatus, IndexError> {
    for file in &args.files {
        let index = match args.cases {
            false => index::<DealReader<Reader>>(file, "deals", args.every)?,
            true => index::<CaseReader<Reader>>(file, "cases", args.every)?,
        };
        let path = index_path(file);
        record::write(&path, &index)?;
        writeln!(
            io::stdout().lock(),
            "{}: {} {}, {} marks in {}",
            file.display(),
            index.steps,
            index.answers,
            index.marks.len(),
            path
        )
        .map_err(IndexError::Stdout)?;
    }
    Ok(ExitStatus::Ok)
}

/// Frames `file` with the game's framing `R` into its index.
fn index<R: Items<Reader>>(file: &Path, answers: &str, every: u64) -> Result<Index, IndexError> {
    let path = || file.to_path_buf();
    let (size, modified) = stamp(file)?;
    let reader = Input::at(Location::File(path())).open().map_err(|source| {
        IndexError::File(FileError {
            op: FileOp::Open,
            path: path(),
            source,
        })
    })?;
    let (mut steps, mut next, mut marks, mut failed) = (0u64, 0u64, Vec::new(), None);
    R::frame(reader, &Mark::default(), &mut |framed| {
        let mark = match framed {
            Framed::Item(mark) => mark,
            Framed::Failed(mark) => {
                failed = Some(mark.offset);
                return false;
            }
        };
        if mark.offset >= next {
            marks.push(Indexed {
                offset: mark.offset,
                line: mark.line,
                item: mark.item,
                count: mark.count,
                steps,
            });
            next = (mark.offset / every + 1).saturating_mul(every);
        }
        steps += 1;
        true
    })
    .map_err(|source| {
        IndexError::File(FileError {
            op: FileOp::Read,
            path: path(),
            source,
        })
    })?;
    if let Some(at) = failed {
        return Err(IndexError::NotItems {
            path: path(),
            answers: answers.to_string(),
            at,
        });
    }
    if stamp(file)? != (size, modified) {
        return Err(IndexError::Changed { path: path() });
    }
    Ok(Index {
        version: VERSION,
        answers: answers.to_string(),
        size,
        modified,
        steps,
        marks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::in_full;

    /// Each failure in the words `patience index` has always said it in (written out here by
    /// hand, as the format strings before the errors were typed said them).
    #[test]
    fn index_errors_say_what_they_always_said() {
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        let cases: Vec<(IndexError, &str)> = vec![
            (
                IndexError::File(FileError {
                    op: FileOp::Open,
                    path: "deals.in".into(),
                    source: denied(),
                }),
                "cannot open deals.in: permission denied",
            ),
            (
                IndexError::File(FileError {
                    op: FileOp::Read,
                    path: "deals.in".into(),
                    source: denied(),
                }),
                "cannot read deals.in: permission denied",
            ),
            (
                IndexError::NotItems {
                    path: "deals.in".into(),
                    answers: "deals".into(),
                    at: 4096,
                },
                "cannot index deals.in: it stops being a file of deals in the step at byte 4096 \
                 (`patience solve` on it says why); its shards frame it instead",
            ),
            (
                IndexError::Changed {
                    path: "deals.in".into(),
                },
                "cannot index deals.in: it changed while it was read",
            ),
            (
                IndexError::Stdout(io::Error::from(io::ErrorKind::BrokenPipe)),
                "cannot write to standard output: broken pipe",
            ),
        ];
        for (error, said) in cases {
            assert_eq!(in_full(&error), said);
        }
    }
}
