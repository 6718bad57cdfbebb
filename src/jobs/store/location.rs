//! Where a job's bytes are: standard input, a local file, or an object (`s3://BUCKET/KEY`, or
//! memory in the tests). A name given on the command line becomes a [`Location`] here and only
//! here ([`Location::parse`]); everything else in `jobs` asks a location for its bytes, its size,
//! its records and its removal, and never decides between a file and an object itself.
//!
//! Files are read and written with `std::fs`, not object_store's `LocalFileSystem`: a file output
//! is appended to in place, synced, cut back to its last complete line on a resume and locked
//! (`flock`) against a second run, none of which an object store's put-the-whole-object calls
//! say. Objects (S3, memory) go through object_store (`object.rs`).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::beneath::{self, How};
use super::object::{self, ObjectUrl};
use crate::compressed::Codec;

/// A place bytes are read from or written to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Stdin,
    File(PathBuf),
    Object(ObjectUrl),
}

impl Location {
    /// The place `name` names: `-` is standard input, `s3://BUCKET/KEY` an object, anything else
    /// a file; an `s3://` name that is not a whole URL is refused in words.
    pub fn parse(name: &Path) -> Result<Location, String> {
        if name == Path::new("-") {
            return Ok(Location::Stdin);
        }
        match name.to_str().and_then(ObjectUrl::parse) {
            None => Ok(Location::File(name.to_path_buf())),
            Some(url) => url.map(Location::Object),
        }
    }

    /// Whether `self` and `other` are one place: the same object, standard input twice, or the
    /// same file however it is named (links and `..` resolved where both exist). The one answer
    /// to "is the output also one of the inputs?" (a run, a daemon's job) and "is a part given
    /// twice, or as the output?" (`merge`).
    pub fn same_place(&self, other: &Location) -> bool {
        match (self, other) {
            (Location::File(a), Location::File(b)) => {
                a == b
                    || a.canonicalize()
                        .is_ok_and(|a| b.canonicalize().is_ok_and(|b| a == b))
            }
            (a, b) => a == b,
        }
    }

    /// The place beside this one named as it is with `suffix` added (`NAME.resume.json`,
    /// `NAME.done.json`): where each of its records sits. Standard input has none beside it.
    pub fn beside(&self, suffix: &str) -> Location {
        match self {
            Location::Stdin => Location::Stdin,
            Location::File(path) => Location::File(beside(path, suffix)),
            Location::Object(url) => Location::Object(url.beside(suffix)),
        }
    }

    /// How its name asks it to be compressed, as an output of that name is written.
    pub fn codec_by_name(&self) -> Option<Codec> {
        match self {
            Location::Stdin => None,
            Location::File(path) => Codec::for_name(&path.to_string_lossy()),
            Location::Object(url) => Codec::for_name(&url.key),
        }
    }

    /// Its bytes as they are (not decoded), from byte `offset`: standard input only from its
    /// start.
    pub fn open_at(&self, offset: u64) -> io::Result<Box<dyn Read + Send>> {
        use io::Seek as _;
        match self {
            Location::Stdin if offset == 0 => Ok(Box::new(io::stdin())),
            Location::Stdin => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "standard input cannot be read from the middle",
            )),
            Location::File(path) => {
                let mut file = beneath::open(path, How::Read)?;
                if offset > 0 {
                    file.seek(io::SeekFrom::Start(offset))?;
                }
                Ok(Box::new(file))
            }
            Location::Object(url) => Ok(Box::new(object::open(url, offset)?)),
        }
    }

    /// Its size in bytes, or why it has none: standard input, or a file that is not a regular
    /// one (a pipe).
    pub fn size(&self) -> io::Result<u64> {
        match self {
            Location::Stdin => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "standard input has no size",
            )),
            Location::File(path) => {
                let meta = beneath::metadata(path)?;
                if !meta.is_file() {
                    return Err(not_a_file(&meta.file_type()));
                }
                Ok(meta.len())
            }
            Location::Object(url) => object::size(url),
        }
    }

    /// Whether it can be opened again and read from anywhere: a regular file or an object. Standard
    /// input, a pipe (`<(zstdcat ...)`, `/dev/stdin`), a FIFO or a character device gives its bytes
    /// once: it is opened once and read through, never looked into first.
    pub fn rereadable(&self) -> bool {
        match self {
            Location::Stdin => false,
            Location::File(path) => beneath::metadata(path).is_ok_and(|meta| meta.is_file()),
            Location::Object(_) => true,
        }
    }

    /// Its first bytes, at most `len` (fewer when it is shorter): what its compression is told by.
    /// Only a [`Location::rereadable`] place is looked into; for any other this is the error that
    /// says why it cannot be (reading it through sees its first bytes anyway).
    pub fn first_bytes(&self, len: u64) -> io::Result<Vec<u8>> {
        match self {
            Location::Stdin => Ok(Vec::new()),
            Location::File(path) => {
                // Looked at before it is opened: opening a FIFO waits for a writer, and whatever
                // reads it first takes its bytes.
                let meta = beneath::metadata(path)?;
                if !meta.is_file() {
                    return Err(not_a_file(&meta.file_type()));
                }
                let mut head = Vec::new();
                beneath::open(path, How::Read)?
                    .take(len)
                    .read_to_end(&mut head)?;
                Ok(head)
            }
            Location::Object(url) => Ok(object::first_bytes(url, len)?.to_vec()),
        }
    }

    /// Whether it is there at all: `false` when missing; a missing bucket, or a place that cannot
    /// be looked at, is an error.
    pub fn exists(&self) -> io::Result<bool> {
        let found = match self {
            Location::Stdin => Ok(()),
            Location::File(path) => beneath::metadata(path).map(|_| ()),
            Location::Object(url) => object::size(url).map(|_| ()),
        };
        match found {
            Ok(()) => Ok(true),
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    && !e.to_string().starts_with("no such bucket") =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The whole of a small place (a record), or `None` when there is none.
    pub fn read_small(&self) -> io::Result<Option<Vec<u8>>> {
        match self {
            Location::Stdin => Ok(None),
            Location::File(path) => match beneath::read(path) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            },
            Location::Object(url) => Ok(object::read_small(url)?.map(|bytes| bytes.to_vec())),
        }
    }

    /// Writes `bytes` as the whole of this place, whole or not at all: a file through a synced
    /// temporary renamed over it, an object in one PUT.
    pub fn put_small(&self, bytes: Vec<u8>) -> io::Result<()> {
        match self {
            Location::Stdin => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "nothing is written beside standard input",
            )),
            Location::File(path) => {
                let temporary = beside(path, ".tmp");
                beneath::write(&temporary, &bytes)?;
                beneath::open(&temporary, How::Read)?.sync_all()?;
                beneath::rename(&temporary, path)
            }
            Location::Object(url) => object::put_small(url, bytes),
        }
    }

    /// Removes what is here, if anything is.
    pub fn remove(&self) -> io::Result<()> {
        match self {
            Location::Stdin => Ok(()),
            Location::File(path) => match beneath::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
            Location::Object(url) => object::remove(url),
        }
    }

    /// The local file, when it is one (a lock, a seek, an index are files' alone).
    pub fn file(&self) -> Option<&Path> {
        match self {
            Location::File(path) => Some(path),
            _ => None,
        }
    }
}

impl std::fmt::Display for Location {
    /// As the command line names it: a path, a URL, or `-`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Stdin => f.write_str("-"),
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Object(url) => write!(f, "{url}"),
        }
    }
}

/// The file beside `file` named as it is with `suffix` added: where every record, lock and
/// temporary of a file sits.
pub fn beside(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Why a file that is not a regular one has no size and cannot be looked into before it is read:
/// what it is, said as its user knows it.
pub fn not_a_file(kind: &std::fs::FileType) -> io::Error {
    use std::os::unix::fs::FileTypeExt as _;
    let what = if kind.is_fifo() {
        "it is a pipe or FIFO, which can be read only once"
    } else if kind.is_char_device() {
        "it is a character device, which can be read only once"
    } else if kind.is_dir() {
        "it is a folder"
    } else if kind.is_socket() {
        "it is a socket, which can be read only once"
    } else {
        "it is not a regular file"
    };
    io::Error::new(io::ErrorKind::Unsupported, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_becomes_one_place() {
        assert_eq!(Location::parse(Path::new("-")), Ok(Location::Stdin));
        assert_eq!(
            Location::parse(Path::new("deals.in")),
            Ok(Location::File("deals.in".into()))
        );
        let object = Location::parse(Path::new("s3://deals/a/b.in")).unwrap();
        assert_eq!(object.to_string(), "s3://deals/a/b.in");
        assert_eq!(
            object.beside(".done.json").to_string(),
            "s3://deals/a/b.in.done.json"
        );
        assert!(Location::parse(Path::new("s3://deals")).is_err());
        assert_eq!(
            Location::File("out.zst".into()).codec_by_name(),
            Some(Codec::Zstd)
        );
    }

    #[test]
    fn records_are_put_read_and_removed_alike_in_a_file_and_an_object() {
        let dir = std::env::temp_dir().join(format!("patience-location-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for place in [
            Location::File(dir.join("part")),
            Location::Object(ObjectUrl::in_memory("records", "jobs/part")),
        ] {
            let record = place.beside(".done.json");
            assert_eq!(record.read_small().unwrap(), None, "{record}");
            assert!(!record.exists().unwrap());
            record.put_small(b"{\"a\":1}\n".to_vec()).unwrap();
            assert!(record.exists().unwrap());
            assert_eq!(record.read_small().unwrap().unwrap(), b"{\"a\":1}\n");
            assert_eq!(record.size().unwrap(), 8);
            assert_eq!(record.first_bytes(2).unwrap(), b"{\"");
            let mut rest = String::new();
            record
                .open_at(2)
                .unwrap()
                .read_to_string(&mut rest)
                .unwrap();
            assert_eq!(rest, "a\":1}\n");
            record.remove().unwrap();
            record.remove().unwrap();
            assert_eq!(record.read_small().unwrap(), None);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
