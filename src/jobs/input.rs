//! Opening the inputs named on the command line, and reading a file or object through.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use super::compressed::{self, Codec, decoded};
use super::object::{self, ObjectUrl};

/// Large enough that a file's deals are batched well; the reader still holds one line at a time.
const BUFFER: usize = 1 << 20;

/// Reads `from` to its end in chunks of [`BUFFER`] bytes, handing each to `each`; the bytes read.
/// The one loop for what reads a whole file or object as bytes (a part's checksum, a resumed
/// file's complete lines, `merge`'s copy): `shown` names it in a read error.
pub fn read_through(
    mut from: impl Read,
    shown: &dyn std::fmt::Display,
    mut each: impl FnMut(&[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut buffer = vec![0u8; BUFFER];
    let mut bytes = 0u64;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot read {shown}"))),
        };
        each(&buffer[..n])?;
        bytes += n as u64;
    }
}

/// The file beside `file` named as it is with `suffix` added (`NAME.resume.json`, `NAME.lock`):
/// where every record, lock and temporary of a file sits. An object's is [`ObjectUrl::beside`].
pub fn beside(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// One input: a file, standard input, or an object in S3-compatible storage.
#[derive(Clone, Debug)]
pub enum Input {
    Stdin,
    File(PathBuf),
    /// `s3://BUCKET/KEY`, or the reason the name given is not one.
    Object(Result<ObjectUrl, String>),
}

/// A buffered input whose buffer can be inspected: when it is empty the next read may block, which
/// is when interactive input should see the answers so far. With [`Reader::consumed`] it also
/// tells how far into the input the deals read so far reach, which is what a progress bar needs.
pub type Reader = BufReader<Counting>;

/// Counts the bytes pulled from an input, so that the bytes consumed can be told from those merely
/// buffered.
pub struct Counting {
    inner: Box<dyn Read + Send>,
    read: u64,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Bytes of an input that the reader has handed on (read minus still buffered).
pub fn consumed(reader: &Reader) -> u64 {
    reader.get_ref().read - reader.buffer().len() as u64
}

impl Input {
    /// The inputs for a list of paths: standard input for an empty list or for `-`.
    pub fn from_args(paths: &[PathBuf]) -> Vec<Input> {
        if paths.is_empty() {
            return vec![Input::Stdin];
        }
        paths
            .iter()
            .map(|p| {
                if p == Path::new("-") {
                    Input::Stdin
                } else if let Some(url) = p.to_str().and_then(ObjectUrl::parse) {
                    Input::Object(url)
                } else {
                    Input::File(p.clone())
                }
            })
            .collect()
    }

    pub fn open(&self) -> io::Result<Reader> {
        self.open_at(0)
    }

    /// Opens the input to read from byte `offset` of its file (a shard's first item); standard
    /// input only from its start. Compressed inputs (gzip, zstd: by their first bytes) are read
    /// decoded, and only from their start.
    pub fn open_at(&self, offset: u64) -> io::Result<Reader> {
        use io::Seek as _;
        let inner: Box<dyn Read + Send> = match self {
            Input::Stdin if offset == 0 => decoded(Box::new(io::stdin()))?.1,
            Input::Stdin => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "standard input cannot be read from the middle",
                ));
            }
            Input::File(path) if offset == 0 => decoded(Box::new(File::open(path)?))?.1,
            Input::File(path) => {
                let mut file = File::open(path)?;
                if let Some(codec) = compressed::sniff(&mut file)? {
                    return Err(from_the_middle(codec));
                }
                file.seek(io::SeekFrom::Start(offset))?;
                Box::new(file)
            }
            Input::Object(url) => {
                let url = named(url)?;
                if offset == 0 {
                    decoded(Box::new(object::open(url, 0)?))?.1
                } else {
                    if let Some(codec) = self.codec()? {
                        return Err(from_the_middle(codec));
                    }
                    Box::new(object::open(url, offset)?)
                }
            }
        };
        Ok(BufReader::with_capacity(
            BUFFER,
            Counting { inner, read: 0 },
        ))
    }

    /// The size of a regular file, known before reading; `None` for standard input, pipes,
    /// compressed files (whose decoded size is not) and anything that cannot be looked at
    /// (reading it will report why).
    pub fn size(&self) -> Option<u64> {
        match self {
            Input::Stdin => None,
            Input::File(path) => {
                let size = std::fs::metadata(path).ok().filter(|m| m.is_file())?.len();
                let codec = compressed::sniff(&mut File::open(path).ok()?).ok()?;
                codec.is_none().then_some(size)
            }
            Input::Object(url) => {
                let size = object::size(url.as_ref().ok()?).ok()?;
                self.codec().ok()?.is_none().then_some(size)
            }
        }
    }

    /// The size of a file or object, or why it has none (`--shard`'s ranges need it).
    pub fn exact_size(&self) -> io::Result<u64> {
        match self {
            Input::Stdin => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "standard input has no size",
            )),
            Input::File(path) => {
                let meta = std::fs::metadata(path)?;
                if !meta.is_file() {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "it is not a regular file",
                    ));
                }
                Ok(meta.len())
            }
            Input::Object(url) => object::size(named(url)?),
        }
    }

    /// The compression of a file, by its first bytes.
    pub fn codec(&self) -> io::Result<Option<Codec>> {
        match self {
            Input::Stdin => Ok(None),
            Input::File(path) => compressed::sniff(&mut File::open(path)?),
            Input::Object(url) => Ok(compressed::sniff_bytes(&object::first_bytes(
                named(url)?,
                4,
            )?)),
        }
    }

    /// The input as the command line names it: its path, or `-`.
    pub fn name(&self) -> String {
        match self {
            Input::Stdin => "-".to_string(),
            Input::File(path) => path.display().to_string(),
            Input::Object(Ok(url)) => url.to_string(),
            Input::Object(Err(said)) => said.clone(),
        }
    }

    /// How error lines name this input: files by path, standard input by nothing.
    pub fn prefix(&self) -> String {
        match self {
            Input::Stdin => String::new(),
            Input::File(path) => format!("{}: ", path.display()),
            Input::Object(_) => format!("{}: ", self.name()),
        }
    }
}

/// Why a compressed input cannot be read from byte `offset` of its file.
pub fn from_the_middle(codec: Codec) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "it is {}-compressed, so it can only be read from its start (decompress it to shard it)",
            codec.name()
        ),
    )
}

/// The object an input names, or why its name is not one.
fn named(url: &Result<ObjectUrl, String>) -> io::Result<&ObjectUrl> {
    url.as_ref()
        .map_err(|said| io::Error::new(io::ErrorKind::InvalidInput, said.clone()))
}
