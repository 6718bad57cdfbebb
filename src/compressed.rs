//! gzip and zstd, in and out: inputs (files, objects, the HTTP API's request bodies) are
//! recognised by their first bytes, whatever their names or headers say, and read through one
//! decoder ([`decoded`]); outputs are compressed when their names end in `.gz` or `.zst`.
//!
//! An output is written as a run of gzip members or zstd frames, each holding whole lines only and
//! ended at every sync (at most once a second, and at the end): both formats decode such a run as
//! one stream, and a process killed mid-write leaves complete members followed by at most one
//! partial member, which `--resume` cuts off as it cuts a plain file's partial last line
//! ([`complete_members`]).

use std::io::{self, BufRead, BufReader, Read, Write};

/// A compression that patience reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Gzip,
    Zstd,
}

/// gzip's magic (RFC 1952) and zstd's frame magic (RFC 8878), in the order they are tried.
const MAGICS: [(&[u8], Codec); 2] = [
    (&[0x1f, 0x8b], Codec::Gzip),
    (&[0x28, 0xb5, 0x2f, 0xfd], Codec::Zstd),
];

/// Parquet's magic, a Parquet file's first and last four bytes. A stream that begins with it is a
/// Parquet file, which is read from its footer at its end and so only from a place that can be
/// read from anywhere (a file, an object); read through as text it would fail on its first line
/// with words that do not say so. The Parquet input and output (`jobs/parquet_in.rs`,
/// `jobs/parquet_out.rs`) look for it too.
pub const PARQUET_MAGIC: &[u8; 4] = b"PAR1";

/// Why a Parquet file read as a stream (a pipe, standard input, a request's body) is not read.
fn parquet_in_a_stream() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "it is a Parquet file, which is read from its footer at its end: give it as a file or an \
         object (a pipe, a FIFO or standard input can only be read from its start)",
    )
}

/// zstd's default level: about gzip's ratio at several times its speed.
const ZSTD_LEVEL: i32 = 3;

impl Codec {
    /// The codec an output's name asks for: `.gz` or `.zst` at its end.
    pub fn for_name(name: &str) -> Option<Codec> {
        if name.ends_with(".gz") {
            Some(Codec::Gzip)
        } else if name.ends_with(".zst") {
            Some(Codec::Zstd)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Codec::Gzip => "gzip",
            Codec::Zstd => "zstd",
        }
    }
}

/// Reads `inner` decoded: its first bytes say whether it is gzip, zstd or neither (or Parquet,
/// refused: see [`PARQUET_MAGIC`]). `inner` is opened once and read once: its first bytes are read from
/// it and handed on, never looked at by a second open, so a pipe loses nothing. Only as many bytes
/// are awaited as could still begin a magic, so typed input is never held back (no deal or case
/// file begins with 0x1f, `(` or `P`).
pub fn decoded(
    mut inner: Box<dyn Read + Send>,
) -> io::Result<(Option<Codec>, Box<dyn Read + Send>)> {
    let mut head = [0u8; 4];
    let mut len = 0;
    while len < head.len()
        && (might_begin(PARQUET_MAGIC, &head[..len])
            || MAGICS
                .iter()
                .any(|(magic, _)| might_begin(magic, &head[..len])))
    {
        match inner.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if head[..len] == *PARQUET_MAGIC {
        return Err(parquet_in_a_stream());
    }
    let codec = MAGICS
        .iter()
        .find(|(magic, _)| head[..len].starts_with(magic))
        .map(|&(_, codec)| codec);
    let whole: Box<dyn Read + Send> = Box::new(io::Cursor::new(head[..len].to_vec()).chain(inner));
    let reader: Box<dyn Read + Send> = match codec {
        None => whole,
        // Members one after another, as `--output NAME.gz` and `cat a.gz b.gz` write them.
        Some(Codec::Gzip) => Box::new(Damage {
            codec: Codec::Gzip,
            inner: flate2::read::MultiGzDecoder::new(whole),
        }),
        // zstd's reader goes on through the frames that follow one another.
        Some(Codec::Zstd) => Box::new(Damage {
            codec: Codec::Zstd,
            inner: zstd::stream::read::Decoder::new(whole)?,
        }),
    };
    Ok((codec, reader))
}

/// A decoder whose errors say what failed: the decoders' own words ("incomplete deflate stream")
/// do not say that the input is compressed, nor which way.
struct Damage<R> {
    codec: Codec,
    inner: R,
}

impl<R: Read> Read for Damage<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| match e.kind() {
            io::ErrorKind::Interrupted => e,
            kind => io::Error::new(
                kind,
                format!(
                    "its {} data is damaged or cut short ({e})",
                    self.codec.name()
                ),
            ),
        })
    }
}

/// Whether `magic` may still be what `head`, the bytes so far, begins.
fn might_begin(magic: &[u8], head: &[u8]) -> bool {
    head.len() < magic.len() && magic.starts_with(head)
}

/// The codec whose magic `head`, a file's first bytes, begins with.
pub fn sniff_bytes(head: &[u8]) -> Option<Codec> {
    MAGICS
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|&(_, codec)| codec)
}

/// A member (gzip) or frame (zstd) being written.
enum Member<W: Write> {
    Gzip(flate2::write::GzEncoder<W>),
    Zstd(zstd::stream::write::Encoder<'static, W>),
}

impl<W: Write> Member<W> {
    fn start(codec: Codec, out: W) -> io::Result<Member<W>> {
        Ok(match codec {
            Codec::Gzip => Member::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::default(),
            )),
            Codec::Zstd => Member::Zstd(zstd::stream::write::Encoder::new(out, ZSTD_LEVEL)?),
        })
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Member::Gzip(encoder) => encoder.write_all(bytes),
            Member::Zstd(encoder) => encoder.write_all(bytes),
        }
    }

    fn finish(self) -> io::Result<W> {
        match self {
            Member::Gzip(encoder) => encoder.finish(),
            Member::Zstd(encoder) => encoder.finish(),
        }
    }
}

/// A writer of whole lines, plain or as members of `codec`: [`Encoded::end_member`] closes the
/// member written so far, after which everything written is decodable.
pub struct Encoded<W: Write> {
    codec: Option<Codec>,
    /// The destination, while no member is open.
    out: Option<W>,
    member: Option<Member<W>>,
}

impl<W: Write> Encoded<W> {
    pub fn new(codec: Option<Codec>, out: W) -> Encoded<W> {
        Encoded {
            codec,
            out: Some(out),
            member: None,
        }
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let Some(codec) = self.codec else {
            return self.out()?.write_all(bytes);
        };
        if self.member.is_none() {
            let out = self.out.take().ok_or_else(broken)?;
            self.member = Some(Member::start(codec, out)?);
        }
        match &mut self.member {
            Some(member) => member.write_all(bytes),
            None => Err(broken()),
        }
    }

    /// Closes the open member, if any, and hands back the destination, where everything written
    /// so far now is.
    pub fn end_member(&mut self) -> io::Result<&mut W> {
        if let Some(member) = self.member.take() {
            self.out = Some(member.finish()?);
        }
        self.out()
    }

    /// Hands the destination what the open member holds compressed so far (the member stays
    /// open; a little of the ratio is lost at each flush).
    pub fn flush_member(&mut self) -> io::Result<()> {
        match &mut self.member {
            Some(Member::Gzip(encoder)) => encoder.flush(),
            Some(Member::Zstd(encoder)) => encoder.flush(),
            None => Ok(()),
        }
    }

    /// The destination as it is, with what an open member has handed it so far.
    pub fn inner(&self) -> Option<&W> {
        match &self.member {
            Some(Member::Gzip(encoder)) => Some(encoder.get_ref()),
            Some(Member::Zstd(encoder)) => Some(encoder.get_ref()),
            None => self.out.as_ref(),
        }
    }

    fn out(&mut self) -> io::Result<&mut W> {
        self.out.as_mut().ok_or_else(broken)
    }
}

/// A member that failed to finish took the destination with it.
fn broken() -> io::Error {
    io::Error::other("an earlier write failed half-way through a compressed member")
}

/// A [`BufRead`] that counts the bytes consumed from it.
struct ConsumedCount<R> {
    inner: R,
    consumed: u64,
}

impl<R: BufRead> Read for ConsumedCount<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for ConsumedCount<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.consumed += amount as u64;
        self.inner.consume(amount);
    }
}

/// The length in bytes of the complete members at the start of `reader` (each decoding whole and
/// ending with a newline), and the lines they hold; what follows them (a member cut short by a
/// killed run) is not counted. `None` when there is nothing to read.
pub fn complete_members(reader: impl Read, codec: Codec) -> io::Result<Option<(u64, u64)>> {
    let mut input = ConsumedCount {
        inner: BufReader::with_capacity(1 << 16, reader),
        consumed: 0,
    };
    if input.fill_buf()?.is_empty() {
        return Ok(None);
    }
    let (mut len, mut lines) = (0u64, 0u64);
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        if input.fill_buf()?.is_empty() {
            return Ok(Some((len, lines)));
        }
        let mut decoder: Box<dyn Read> = match codec {
            Codec::Gzip => Box::new(flate2::bufread::GzDecoder::new(&mut input)),
            Codec::Zstd => match zstd::stream::read::Decoder::with_buffer(&mut input) {
                Ok(decoder) => Box::new(decoder.single_frame()),
                Err(_) => return Ok(Some((len, lines))),
            },
        };
        let (mut member_lines, mut last) = (0u64, b'\n');
        let whole = loop {
            match decoder.read(&mut buffer) {
                Ok(0) => break true,
                Ok(n) => {
                    member_lines += memchr::memchr_iter(b'\n', &buffer[..n]).count() as u64;
                    last = buffer[n - 1];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A member cut short, or bytes that are no member: the complete ones end here.
                Err(_) => break false,
            }
        };
        drop(decoder);
        if !whole || last != b'\n' {
            return Ok(Some((len, lines)));
        }
        len = input.consumed;
        lines += member_lines;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(codec: Codec, members: &[&str]) -> Vec<u8> {
        let mut encoded = Encoded::new(Some(codec), Vec::new());
        for member in members {
            encoded.write_all(member.as_bytes()).unwrap();
            encoded.end_member().unwrap();
        }
        encoded.end_member().unwrap().clone()
    }

    fn decode(bytes: Vec<u8>) -> (Option<Codec>, String) {
        let (codec, mut reader) = decoded(Box::new(io::Cursor::new(bytes))).unwrap();
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        (codec, text)
    }

    #[test]
    fn members_read_back_as_one_stream() {
        for codec in [Codec::Gzip, Codec::Zstd] {
            let bytes = encode(codec, &["0.5\n", "0.25\n0.125\n"]);
            assert_eq!(decode(bytes), (Some(codec), "0.5\n0.25\n0.125\n".into()));
        }
        assert_eq!(decode(b"AS 2D\n".to_vec()), (None, "AS 2D\n".into()));
        assert_eq!(decode(vec![0x1f]), (None, "\u{1f}".into()));
        assert_eq!(decode(Vec::new()), (None, String::new()));
    }

    #[test]
    fn a_member_cut_short_is_not_counted() {
        for codec in [Codec::Gzip, Codec::Zstd] {
            let two = encode(codec, &["0.5\n", "0.25\n0.125\n"]);
            let three = encode(codec, &["0.5\n", "0.25\n0.125\n", "1\n2\n3\n"]);
            let whole = Some((three.len() as u64, 6));
            assert_eq!(complete_members(&three[..], codec).unwrap(), whole);
            let kept = Some((two.len() as u64, 3));
            for cut in two.len()..three.len() {
                assert_eq!(
                    complete_members(&three[..cut], codec).unwrap(),
                    kept,
                    "{cut}"
                );
            }
            let one = encode(codec, &["0.5\n"]).len() as u64;
            assert_eq!(
                complete_members(&two[..two.len() - 1], codec).unwrap(),
                Some((one, 1))
            );
            assert_eq!(complete_members(&[][..], codec).unwrap(), None);
            let partial_line = encode(codec, &["0.5\n", "0.2"]);
            assert_eq!(
                complete_members(&partial_line[..], codec).unwrap(),
                Some((one, 1))
            );
        }
    }
}
