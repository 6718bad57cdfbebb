//! Opening the inputs named on the command line, and reading a file or object through.

use std::io::{self, BufReader, Read};
use std::path::PathBuf;

use super::location::Location;
use crate::compressed::{self, Codec, decoded};

/// Large enough that a file's deals are batched well; the reader still holds one line at a time.
const BUFFER: usize = 1 << 20;

/// A file or object that could not be read through ([`read_through`]), named as its reader
/// shows it; the storage's error is the cause.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {shown}")]
pub struct ReadThroughError {
    shown: String,
    #[source]
    source: io::Error,
}

/// Reads `from` to its end in chunks of [`BUFFER`] bytes, handing each to `each`; the bytes read.
/// The one loop for what reads a whole file or object as bytes (a part's checksum, a resumed
/// file's complete lines, `merge`'s copy): `shown` names it in a read error, which becomes the
/// caller's error `E` as `each`'s own failures are.
pub fn read_through<E: From<ReadThroughError>>(
    mut from: impl Read,
    shown: &dyn std::fmt::Display,
    mut each: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<u64, E> {
    let mut buffer = vec![0u8; BUFFER];
    let mut bytes = 0u64;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(ReadThroughError {
                    shown: shown.to_string(),
                    source,
                }
                .into());
            }
        };
        each(&buffer[..n])?;
        bytes += n as u64;
    }
}

/// One input: standard input, a file or an object, or the reason its name is none of them
/// (said when it is read, in its turn, as a missing file is).
#[derive(Clone, Debug)]
pub struct Input(Result<Location, String>);

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
            return vec![Input(Ok(Location::Stdin))];
        }
        paths.iter().map(|p| Input(Location::parse(p))).collect()
    }

    /// The input at `location`.
    pub fn at(location: Location) -> Input {
        Input(Ok(location))
    }

    /// Where it is, when its name is good.
    pub fn location(&self) -> Option<&Location> {
        self.0.as_ref().ok()
    }

    pub fn is_stdin(&self) -> bool {
        self.location() == Some(&Location::Stdin)
    }

    fn place(&self) -> io::Result<&Location> {
        self.0
            .as_ref()
            .map_err(|said| io::Error::new(io::ErrorKind::InvalidInput, said.clone()))
    }

    pub fn open(&self) -> io::Result<Reader> {
        self.open_at(0)
    }

    /// Opens the input to read from byte `offset` of its file (a shard's first item); standard
    /// input only from its start. Compressed inputs (gzip, zstd: by their first bytes) are read
    /// decoded, and only from their start.
    pub fn open_at(&self, offset: u64) -> io::Result<Reader> {
        let at = self.place()?;
        let inner = if offset == 0 {
            decoded(at.open_at(0)?)?.1
        } else {
            if let Some(codec) = self.codec()? {
                return Err(from_the_middle(codec));
            }
            at.open_at(offset)?
        };
        Ok(BufReader::with_capacity(
            BUFFER,
            Counting { inner, read: 0 },
        ))
    }

    /// The size of a regular file or an object, known before reading; `None` for standard input,
    /// pipes, compressed inputs (whose decoded size is not) and anything that cannot be looked at
    /// (reading it will report why).
    pub fn size(&self) -> Option<u64> {
        let size = self.exact_size().ok()?;
        self.codec().ok()?.is_none().then_some(size)
    }

    /// The size of a file or object, or why it has none (`--shard`'s ranges need it).
    pub fn exact_size(&self) -> io::Result<u64> {
        self.place()?.size()
    }

    /// The compression of a file or object, by its first bytes.
    pub fn codec(&self) -> io::Result<Option<Codec>> {
        Ok(compressed::sniff_bytes(&self.place()?.first_bytes(4)?))
    }

    /// The input as the command line names it: its path, or `-`.
    pub fn name(&self) -> String {
        match &self.0 {
            Ok(at) => at.to_string(),
            Err(said) => said.clone(),
        }
    }

    /// How error lines name this input: files by path, standard input by nothing.
    pub fn prefix(&self) -> String {
        match self.is_stdin() {
            true => String::new(),
            false => format!("{}: ", self.name()),
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
