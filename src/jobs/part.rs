//! A shard's output file as a *part* of a whole job: complete or visibly not, whatever runs it
//! how often.
//!
//! - `FILE.lock`: every run with `--output FILE` holds a lock on it (`flock`, released when the
//!   process ends, however it ends), so a second run of the same output (a retry, a second pod
//!   for one Kubernetes index) waits for the first to end, says so, and then runs as asked (with
//!   `--resume`, on from what the first wrote): two runs never write FILE at once.
//! - `FILE.done.json`, the completion record: written (a temporary file renamed) once the part
//!   holds every answer of its shard, synced; removed before a run changes FILE in any way. It
//!   names the job (the resume record: flags and inputs, and the inputs' sizes), the shard's range
//!   and items, the bad ones, the run's status, and FILE's length, lines and CRC-32. A part with
//!   no record, or whose bytes do not match it, is incomplete: `--resume` finishes it.
//!
//! A part may be an object, `s3://BUCKET/KEY` ([`PartPlace`]): its record is the object
//! `KEY.done.json` beside it, removed before a run changes the object (`upload.rs`) and put once
//! the upload is complete and read back. An object shows only once its upload completes, so there
//! is no torn object to guard against; nor is there a lock (two runs of one object part are not
//! kept apart: docs/storage.md).

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use super::compressed::{self, Codec};
use super::input::{beside, read_through};
use super::object::{self, ObjectUrl};
use super::output::ExitStatus;
pub use super::resume::done_path;
use super::resume::{self, Record};
use super::shard::{Range, ShardPlan};
use super::upload;

/// The completion record's layout; another version is refused rather than guessed at.
const VERSION: u32 = 1;

/// What `FILE.done.json` holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    pub version: u32,
    /// How the answers were written and for which inputs (the resume record, shard included).
    pub record: Record,
    /// The inputs' sizes in bytes, which set the ranges.
    pub sizes: Vec<u64>,
    pub range: Range,
    /// `error:` lines among the items.
    pub bad: u64,
    /// The run's exit status: 0, or 1 when some item was bad.
    pub status: u8,
    /// The part's bytes: length, lines and CRC-32.
    pub bytes: u64,
    pub lines: u64,
    pub crc32: u32,
}

/// Where a part is: a local file, or an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartPlace {
    File(PathBuf),
    Object(ObjectUrl),
}

impl PartPlace {
    /// The place `path` names: an object when it is `s3://BUCKET/KEY`, else a file.
    pub fn of(path: &Path) -> anyhow::Result<PartPlace> {
        match path.to_str().and_then(ObjectUrl::parse) {
            None => Ok(PartPlace::File(path.to_path_buf())),
            Some(Ok(url)) => Ok(PartPlace::Object(url)),
            Some(Err(said)) => bail!(said),
        }
    }

    /// Where its completion record is, for messages.
    pub fn done_name(&self) -> String {
        match self {
            PartPlace::File(path) => done_path(path).display().to_string(),
            PartPlace::Object(url) => url.beside(".done.json").to_string(),
        }
    }

    /// Its bytes, from the start.
    pub fn open(&self) -> anyhow::Result<Box<dyn Read + Send>> {
        let opened: io::Result<Box<dyn Read + Send>> = match self {
            PartPlace::File(path) => File::open(path).map(|f| Box::new(f) as Box<dyn Read + Send>),
            PartPlace::Object(url) => {
                object::open(url, 0).map(|r| Box::new(r) as Box<dyn Read + Send>)
            }
        };
        opened.with_context(|| format!("cannot read {self}"))
    }

    /// How its name says it is compressed, as an output of that name is written.
    fn codec(&self) -> Option<Codec> {
        match self {
            PartPlace::File(path) => Codec::for_name(&path.to_string_lossy()),
            PartPlace::Object(url) => Codec::for_name(&url.key),
        }
    }

    /// Whether it is there at all (`false`: missing; an unreadable place is an error).
    pub fn exists(&self) -> anyhow::Result<bool> {
        let found = match self {
            PartPlace::File(path) => std::fs::metadata(path).map(|_| ()),
            PartPlace::Object(url) => object::size(url).map(|_| ()),
        };
        match found {
            Ok(()) => Ok(true),
            // A missing bucket is said as such, not as a missing part.
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    && !e.to_string().starts_with("no such bucket") =>
            {
                Ok(false)
            }
            Err(e) => Err(anyhow::Error::new(e).context(format!("cannot read {self}"))),
        }
    }
}

impl std::fmt::Display for PartPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PartPlace::File(path) => write!(f, "{}", path.display()),
            PartPlace::Object(url) => write!(f, "{url}"),
        }
    }
}

/// The lock file beside `output` (`NAME.lock`), opened (created if need be) but not taken, and
/// its path: a run writing `output` holds it, a merge checks that none does.
pub fn lock_file(output: &Path) -> anyhow::Result<(File, PathBuf)> {
    let path = beside(output, ".lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the lock {}", path.display()))?;
    Ok((file, path))
}

/// Takes the lock of `output` for this process's life; when another run holds it, `say`s so and
/// waits for it to end.
pub fn lock(output: &Path, say: &dyn Fn(&str)) -> anyhow::Result<File> {
    let (file, path) = lock_file(output)?;
    match file.try_lock() {
        Ok(()) => return Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => say(&format!(
            "patience: another run is writing {} (it holds {}); waiting for it to end",
            output.display(),
            path.display()
        )),
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(anyhow::Error::new(e).context(format!("cannot lock {}", path.display())));
        }
    }
    file.lock()
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(file)
}

/// Records `output` complete: the shard of `plan` answered `items` items, `bad` of them bad.
pub fn complete(
    output: &PartPlace,
    plan: &ShardPlan,
    items: u64,
    bad: u64,
    status: ExitStatus,
) -> anyhow::Result<()> {
    if items != plan.range.items {
        bail!(
            "{output} holds {items} answers where shard {} frames {} items: an input changed \
             while it was read; it is left incomplete",
            plan.range.shard,
            plan.range.items
        );
    }
    let sum = checksum(output)?;
    if sum.lines != items {
        bail!("{output} holds {} lines for {items} answers", sum.lines);
    }
    let record = match output {
        PartPlace::File(path) => resume::read_record(path)?,
        PartPlace::Object(url) => serde_json::from_value(upload::record_of(url)?)
            .with_context(|| format!("{url}'s record is not one patience wrote"))?,
    };
    let done = Done {
        version: VERSION,
        record,
        sizes: plan.sizes.clone(),
        range: plan.range.clone(),
        bad,
        status: status as u8,
        bytes: sum.bytes,
        lines: sum.lines,
        crc32: sum.crc32,
    };
    let mut text = serde_json::to_string(&done).context("cannot write the completion record")?;
    text.push('\n');
    match output {
        PartPlace::File(path) => resume::write_atomically(&done_path(path), &text),
        PartPlace::Object(url) => {
            let done = url.beside(".done.json");
            object::put_small(&done, text.into_bytes())
                .with_context(|| format!("cannot write {done}"))
        }
    }
}

/// A part's length, lines (decoded, for a compressed part) and CRC-32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartSum {
    pub bytes: u64,
    pub lines: u64,
    pub crc32: u32,
}

/// Reads the part for its [`PartSum`] (a compressed one twice: its bytes, then its members'
/// lines).
pub fn checksum(place: &PartPlace) -> anyhow::Result<PartSum> {
    let mut crc = flate2::Crc::new();
    let mut lines = 0u64;
    let bytes = read_through(place.open()?, place, |chunk| {
        crc.update(chunk);
        lines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        Ok(())
    })?;
    // A compressed part's lines are its answers' lines, decoded: its members' bytes hold newlines
    // by chance.
    if let Some(codec) = place.codec() {
        lines = compressed::complete_members(place.open()?, codec)
            .with_context(|| format!("cannot read {place}"))?
            .map_or(0, |(_, lines)| lines);
    }
    Ok(PartSum {
        bytes,
        lines,
        crc32: crc.sum(),
    })
}

/// A part's completion record, read back; `None` when there is none (the part is incomplete).
pub fn read_done(output: &PartPlace) -> anyhow::Result<Option<Done>> {
    let shown = output.done_name();
    let text = match output {
        PartPlace::File(path) => match std::fs::read(done_path(path)) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot read {shown}"))),
        },
        PartPlace::Object(url) => match object::read_small(&url.beside(".done.json")) {
            Ok(Some(text)) => text.to_vec(),
            Ok(None) => return Ok(None),
            Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot read {shown}"))),
        },
    };
    let done: Done = serde_json::from_slice(&text)
        .with_context(|| format!("{shown} is not a completion record patience wrote"))?;
    if done.version != VERSION {
        bail!(
            "{shown} is of version {} (this patience reads version {VERSION})",
            done.version
        );
    }
    Ok(Some(done))
}
