//! `patience merge`: the N parts of a sharded job (`--shard K/N --output PART`) into the whole
//! output, only when they make it.
//!
//! Before writing anything it checks that every part is complete (its completion record is there
//! and its bytes are the ones recorded: nothing cut or changed since), that all are of one job
//! (the same flags, inputs and input sizes, the same N), that every shard from 0 to N-1 is there
//! once and that their ranges tile the input, items and bytes. Each refusal names the part and
//! what to do, with exit status 2. With `--output` the whole is written beside it and renamed
//! into place at the end, so a merge that fails half-way leaves nothing that looks complete.
//!
//! Parts and the output may be objects (`s3://BUCKET/KEY`, [`Location`]), read with streamed
//! GETs; an object output is a multipart upload, which shows only once complete (and is aborted
//! when the merge fails), as the file renamed into place.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use arrow_schema::ArrowError;
use parquet::errors::ParquetError;

use super::part::{self, Done, PartError, PartSum};
use crate::jobs::outcome::ExitStatus;
use crate::jobs::sink::parquet_out;
use crate::jobs::sink::tail::{self, Appending};
use crate::jobs::source::input::{ReadThroughError, read_through};
use crate::jobs::source::parquet_in;
use crate::jobs::store::location::Location;
use crate::jobs::store::object::StorageSettings;
use crate::jobs::store::record::{self, RecordError};

mod refusal;

pub use refusal::MergeRefusal;

/// Why `merge` wrote nothing: the parts do not make a whole ([`MergeRefusal`]), or a part or the
/// output could not be read or written, the storage's error as the cause.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Boxed: a refusal names up to three places and what they hold, which every step's result
    /// would otherwise carry.
    #[error(transparent)]
    Refused(Box<MergeRefusal>),
    #[error(transparent)]
    Part(#[from] PartError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    ReadThrough(#[from] ReadThroughError),
    /// A Parquet part whose rows cannot be read, with Parquet's words for why.
    #[error("cannot read {at}: {why}")]
    Rows { at: Location, why: String },
    /// Standard output, or the whole being written, refused the bytes.
    #[error("cannot write the merged output")]
    Out(#[source] io::Error),
    /// Whatever stopped the whole from being written: it was left unfinished, so nothing shows.
    #[error("cannot write {output}")]
    Write {
        output: Location,
        #[source]
        source: Box<MergeError>,
    },
    #[error(transparent)]
    Parquet(#[from] ParquetError),
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<MergeRefusal> for MergeError {
    fn from(refusal: MergeRefusal) -> MergeError {
        MergeError::Refused(Box::new(refusal))
    }
}

/// What `patience merge` is asked to do.
#[derive(Clone, Debug)]
pub struct MergePlan {
    /// The whole output's file or object; standard output when `None`.
    pub output: Option<PathBuf>,
    /// The parts, each the output of one `--shard K/N` run (a file or an object), in any order.
    pub parts: Vec<PathBuf>,
    /// Object storage's limits (objects among the parts and the output).
    pub storage: StorageSettings,
}

/// One part, checked complete.
struct Part {
    path: Location,
    done: Done,
    /// Held while merging a file: a run writing the part would have it.
    _lock: Option<File>,
}

pub fn run(args: &MergePlan) -> Result<ExitStatus, MergeError> {
    args.storage.configure();
    let output = args.output.as_deref().map(part::place).transpose()?;
    let places = args
        .parts
        .iter()
        .map(|path| part::place(path))
        .collect::<Result<Vec<Location>, PartError>>()?;
    let mut parts = Vec::with_capacity(places.len());
    for (i, place) in places.iter().enumerate() {
        if output
            .as_ref()
            .is_some_and(|output| output.same_place(place))
        {
            return Err(MergeRefusal::OutputIsAPart(place.clone()).into());
        }
        if places[..i].iter().any(|other| other.same_place(place)) {
            return Err(MergeRefusal::GivenTwice(place.clone()).into());
        }
        parts.push(checked(place)?);
    }
    let ordered = in_order(&parts)?;
    let status = ordered
        .iter()
        .map(|p| p.done.status)
        .max()
        .map_or(ExitStatus::Ok, |s| match s {
            0 => ExitStatus::Ok,
            _ => ExitStatus::BadInput,
        });
    let parquet = ordered
        .first()
        .is_some_and(|part| part.done.record.format == "parquet");
    let part_size = args.storage.upload_part_size;
    match &output {
        None if parquet => return Err(MergeRefusal::ParquetToStandardOutput.into()),
        Some(output) if parquet => written(output, part_size, |whole| {
            let parts = ordered.iter().map(|part| {
                parquet_in::answers(&part.path).map_err(|why| MergeError::Rows {
                    at: part.path.clone(),
                    why,
                })
            });
            parquet_out::write_whole(whole, parts)
        })?,
        None => {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            copy_all(&ordered, &mut out)?;
        }
        // Written whole or not at all: a failed merge leaves no output, and an earlier one as it
        // was.
        Some(output) => written(output, part_size, |whole| copy_all(&ordered, whole))?,
    }
    Ok(status)
}

/// Writes `output` whole with `write`, or not at all: whatever fails, said as `cannot write
/// OUTPUT` and why.
fn written(
    output: &Location,
    part_size: usize,
    write: impl FnOnce(&mut Appending<'_>) -> Result<(), MergeError>,
) -> Result<(), MergeError> {
    let whole = || -> Result<(), MergeError> {
        let mut whole = tail::whole(output, part_size)?;
        write(&mut Appending(whole.as_mut()))?;
        Ok(whole.finish()?)
    };
    whole().map_err(|source| MergeError::Write {
        output: output.clone(),
        source: Box::new(source),
    })
}

/// The part at `place`, locked (a file), with its completion record, its bytes checked against
/// it.
fn checked(place: &Location) -> Result<Part, MergeError> {
    if !part::exists(place)? {
        return Err(MergeRefusal::Missing(place.clone()).into());
    }
    let lock = place.file().map(lock).transpose()?;
    let Some(done) = part::read_done(place)? else {
        return Err(MergeRefusal::Incomplete {
            place: place.clone(),
            done: record::done_of(place),
        }
        .into());
    };
    let held = part::checksum(place)?;
    let said = PartSum {
        bytes: done.bytes,
        lines: done.lines,
        crc32: done.crc32,
    };
    if held != said {
        return Err(MergeRefusal::NotAsRecorded {
            place: place.clone(),
            held,
            done: record::done_of(place),
            said,
            shard: done.range.shard,
        }
        .into());
    }
    Ok(Part {
        path: place.clone(),
        done,
        _lock: lock,
    })
}

/// The lock of the part file at `path`, taken: no run is writing it.
fn lock(path: &Path) -> Result<File, MergeError> {
    let (lock, lock_path) = part::lock_file(path)?;
    if lock.try_lock().is_err() {
        return Err(MergeRefusal::BeingWritten {
            part: path.to_path_buf(),
            lock: lock_path,
        }
        .into());
    }
    Ok(lock)
}

/// What makes a part one of a job, said for a refusal.
fn job(done: &Done) -> String {
    let mut record = done.record.clone();
    record.shard = None;
    format!(
        "{} shards of {} ({} bytes), {} as {} lines{}{}{}{}",
        done.range.shard.count,
        record.inputs.join(" "),
        done.sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("+"),
        record.answers,
        record.format,
        record
            .precision
            .map(|p| format!(" with --precision {p}"))
            .unwrap_or_default(),
        if record.exact { ", --exact" } else { "" },
        if record.moves { ", --moves" } else { "" },
        if record.line { ", --line" } else { "" },
    )
}

/// The parts in shard order, once they are checked to be all of one job's, each once, tiling
/// the input.
fn in_order(parts: &[Part]) -> Result<Vec<&Part>, MergeError> {
    let Some(first) = parts.first() else {
        return Err(MergeRefusal::NoParts.into());
    };
    let ours = job(&first.done);
    for part in parts {
        let theirs = job(&part.done);
        if theirs != ours {
            return Err(MergeRefusal::AnotherJob {
                part: part.path.clone(),
                theirs,
                first: first.path.clone(),
                ours,
            }
            .into());
        }
    }
    let count = first.done.range.shard.count;
    let mut by_shard: BTreeMap<u64, &Part> = BTreeMap::new();
    for part in parts {
        let k = part.done.range.shard.index;
        if k >= count {
            return Err(MergeRefusal::NoSuchShard {
                part: part.path.clone(),
                index: k,
                count,
            }
            .into());
        }
        if let Some(other) = by_shard.insert(k, part) {
            return Err(MergeRefusal::SameShard {
                first: other.path.clone(),
                second: part.path.clone(),
                shard: part.done.range.shard,
            }
            .into());
        }
    }
    // The first few missing (a record may say any N: nothing here is sized by it).
    let missing: Vec<u64> = (0..count)
        .filter(|k| !by_shard.contains_key(k))
        .take(10)
        .collect();
    if !missing.is_empty() {
        let more = count - by_shard.len() as u64 - missing.len() as u64;
        return Err(MergeRefusal::MissingShards {
            shards: missing,
            more,
            count,
        }
        .into());
    }
    let ordered: Vec<&Part> = by_shard.into_values().collect();
    let (mut byte, mut item) = (0u64, 0u64);
    for part in &ordered {
        let range = &part.done.range;
        if range.start != byte || range.first != item {
            return Err(MergeRefusal::Gap {
                part: part.path.clone(),
                shard: range.shard,
                start: range.start,
                first: range.first,
                byte,
                item,
            }
            .into());
        }
        byte = range.end;
        item = range.first + range.items;
    }
    let total = first.done.range.total;
    if byte != total {
        return Err(MergeRefusal::Short { byte, total }.into());
    }
    Ok(ordered)
}

/// Copies every part into `out`, checking each one's bytes against its record again on the way.
fn copy_all(parts: &[&Part], out: &mut dyn io::Write) -> Result<(), MergeError> {
    for part in parts {
        let shown = &part.path;
        let mut crc = flate2::Crc::new();
        let bytes = read_through(part::open(&part.path)?, shown, |chunk| {
            crc.update(chunk);
            out.write_all(chunk).map_err(MergeError::Out)
        })?;
        if (bytes, crc.sum()) != (part.done.bytes, part.done.crc32) {
            return Err(MergeRefusal::ChangedWhileMerged(shown.clone()).into());
        }
    }
    out.flush().map_err(MergeError::Out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::in_full;

    /// What stops a merge once the parts are checked, in the words it has always had (written out
    /// here by hand, as the format strings before the errors were typed said them): a whole
    /// output that cannot be written says so before why, a refusal included.
    #[test]
    fn merge_errors_say_what_they_always_said() {
        let at = |name: &str| Location::File(PathBuf::from(name));
        let full = || io::Error::from(io::ErrorKind::StorageFull);
        let write = |source: MergeError| MergeError::Write {
            output: at("all.txt"),
            source: Box::new(source),
        };
        let cases: Vec<(MergeError, &str)> = vec![
            (
                MergeError::Out(full()),
                "cannot write the merged output: no storage space",
            ),
            (
                write(MergeError::Out(full())),
                "cannot write all.txt: cannot write the merged output: no storage space",
            ),
            (
                write(MergeError::Io(full())),
                "cannot write all.txt: no storage space",
            ),
            (
                write(MergeRefusal::ChangedWhileMerged(at("p1.txt")).into()),
                "cannot write all.txt: p1.txt changed while it was merged: merge again",
            ),
            (
                write(MergeError::Rows {
                    at: at("p0.parquet"),
                    why: "not a Parquet file".into(),
                }),
                "cannot write all.txt: cannot read p0.parquet: not a Parquet file",
            ),
        ];
        for (error, said) in cases {
            assert_eq!(in_full(&error), said);
        }
    }
}
