//! Opening the inputs named on the command line, and reading a file or object through.

use std::io::{self, BufReader, Read};
use std::os::fd::{AsFd as _, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};

use crate::compressed::{self, Codec, decoded};
use crate::jobs::store::beneath::{self, How};
use crate::jobs::store::location::Location;

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

/// Reads `from` to its end in chunks of `BUFFER` bytes, handing each to `each`; the bytes read.
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
pub struct Input(Result<Location, String>, Option<String>);

/// A buffered input whose buffer can be inspected: when it is empty the next read may block, which
/// is when interactive input should see the answers so far. With [`consumed`] it also
/// tells how far into the input the deals read so far reach, which is what a progress bar needs.
pub type Reader = BufReader<Counting>;

/// Counts the bytes pulled from an input, so that the bytes consumed can be told from those merely
/// buffered.
pub struct Counting {
    inner: Box<dyn Read + Send>,
    read: u64,
    /// For an input a writer feeds (standard input, a pipe, a FIFO): its descriptor, to ask
    /// whether the writer has sent more ([`at_hand`]).
    writer: Option<OwnedFd>,
}

impl std::fmt::Debug for Counting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counting")
            .field("read", &self.read)
            .field("writer", &self.writer)
            .finish_non_exhaustive()
    }
}

/// How long the reader waits for a writer's next bytes before taking it that the writer is
/// waiting for answers (a person typing): a program writing a file through a pipe sends its next
/// bytes well within this.
const WRITER_PAUSE: Duration = Duration::from_millis(100);

/// Whether more of `reader`'s input is at hand: buffered, or sent by its writer within
/// `WRITER_PAUSE`. Always for a file or an object, which no writer feeds.
pub fn at_hand(reader: &Reader) -> bool {
    if !reader.buffer().is_empty() {
        return true;
    }
    let Some(fd) = &reader.get_ref().writer else {
        return true;
    };
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    let pause = Timespec {
        tv_sec: 0,
        tv_nsec: WRITER_PAUSE.as_nanos() as _,
    };
    // An error (or hang-up, which poll reports as ready) is left for the read to say.
    !matches!(rustix::event::poll(&mut fds, Some(&pause)), Ok(0))
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
            return vec![Input(Ok(Location::Stdin), None)];
        }
        paths
            .iter()
            .map(|p| Input(Location::parse(p), None))
            .collect()
    }

    /// The input at `location`.
    pub fn at(location: Location) -> Input {
        Input(Ok(location), None)
    }

    /// Where it is, when its name is good.
    pub fn location(&self) -> Option<&Location> {
        self.0.as_ref().ok()
    }

    /// Whether it can be opened again and read from anywhere (`Location::rereadable`): not
    /// standard input, a pipe, a FIFO or a device, which a writer feeds.
    pub fn rereadable(&self) -> bool {
        self.location().is_some_and(Location::rereadable)
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
        let mut writer = None;
        let inner = if offset == 0 {
            let raw: Box<dyn Read + Send> = match at {
                Location::Stdin => {
                    writer = io::stdin().as_fd().try_clone_to_owned().ok();
                    Box::new(io::stdin())
                }
                Location::File(path) if !at.rereadable() => {
                    let file = beneath::open(path, How::Read)?;
                    writer = file.as_fd().try_clone_to_owned().ok();
                    Box::new(file)
                }
                _ => at.open_at(0)?,
            };
            decoded(raw)?.1
        } else {
            if let Some(codec) = self.codec()? {
                return Err(from_the_middle(codec));
            }
            at.open_at(offset)?
        };
        Ok(BufReader::with_capacity(
            BUFFER,
            Counting {
                inner,
                read: 0,
                writer,
            },
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

    /// The same input, named relative to `root` when it is a file under it: a daemon's job names
    /// its inputs as its spec does, relative to the jobs folder, in its `error:` lines, its error
    /// and its output's run record, wherever the folder is mounted.
    pub fn named_within(self, root: &std::path::Path) -> Input {
        let shown = match &self.0 {
            Ok(Location::File(path)) => path
                .strip_prefix(root)
                .ok()
                .filter(|relative| !relative.as_os_str().is_empty())
                .map(|relative| relative.display().to_string()),
            _ => None,
        };
        Input(self.0, shown.or(self.1))
    }

    /// The input as the command line names it: its path, or `-` (or as a daemon's job names it:
    /// [`Input::named_within`]).
    pub fn name(&self) -> String {
        if let Some(shown) = &self.1 {
            return shown.clone();
        }
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
