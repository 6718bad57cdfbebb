//! The non-blank lines of a text input, numbered as an editor numbers them. Both games' files are
//! framed by lines and their errors name lines, so both readers read through this one type and
//! agree on what a line is and what its number is.

use std::io::{self, BufRead, Read as _};

/// The longest line read, with its line ending: far beyond any line of either game (a deal's is
/// about 110 bytes), so a line longer than this means the input is not such a file (a binary, or
/// a huge file without newlines), and reading it whole would only exhaust memory.
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

/// Reads one line at a time into a buffer it reuses, so reading a file of any size takes the
/// memory of its longest line, at most [`MAX_LINE_BYTES`].
#[derive(Debug)]
pub(crate) struct Lines<R> {
    input: R,
    line: Vec<u8>,
    number: u64,
    /// Bytes read from the input so far, and where the current line starts among them: a shard
    /// frames a file by where its items' first lines start (`crate::items::Mark`).
    read: u64,
    start: u64,
}

impl<R: BufRead> Lines<R> {
    #[cfg(test)]
    pub(crate) fn new(input: R) -> Self {
        Lines::resumed(input, 0)
    }

    /// Lines of an input already read up to a line's start, `before` lines in: numbering goes on
    /// from there, and offsets count from where `input` stands.
    pub(crate) fn resumed(input: R, before: u64) -> Self {
        Lines {
            input,
            line: Vec::new(),
            number: before,
            read: 0,
            start: 0,
        }
    }

    /// Moves to the next line that is not blank (nor only whitespace); false at the end of the
    /// input. Blank lines still count in the numbering. A line longer than [`MAX_LINE_BYTES`], or
    /// one that is not text (a NUL byte, or bytes that are not UTF-8), is an error of kind
    /// `InvalidData` naming it, and ends the input: the file is not one of deals or cases (a
    /// binary, say), and reading on would give an error line for each of its lines.
    pub(crate) fn advance(&mut self) -> io::Result<bool> {
        loop {
            self.line.clear();
            self.start = self.read;
            let n = self.next_line()?;
            if n == 0 {
                return Ok(false);
            }
            self.read += n as u64;
            self.number += 1;
            if self.line.len() > MAX_LINE_BYTES {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "line {} is longer than {} bytes: not a text file of deals or cases",
                        self.number, MAX_LINE_BYTES
                    ),
                ));
            }
            if let Some(what) = not_text(&self.line) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "line {} is not text ({what}): not a file of deals or cases",
                        self.number
                    ),
                ));
            }
            // Some Windows editors start a UTF-8 file with a byte-order mark.
            if self.number == 1 && self.line.starts_with(b"\xef\xbb\xbf") {
                self.line.drain(..3);
            }
            if !self.line.iter().all(u8::is_ascii_whitespace) {
                return Ok(true);
            }
        }
    }

    /// Reads the next line, its line ending included, into `self.line`; its length (0 at the end
    /// of the input). A line whole in the input's buffer (nearly every line of a file) is copied
    /// out of it at once; one that spans a refill, or is too long, goes through `read_until`,
    /// which stops one byte past the limit for [`Lines::advance`] to refuse.
    fn next_line(&mut self) -> io::Result<usize> {
        let buffered = self.input.fill_buf()?;
        if let Some(end) = memchr::memchr(b'\n', buffered)
            && end < MAX_LINE_BYTES
        {
            self.line.extend_from_slice(&buffered[..=end]);
            self.input.consume(end + 1);
            return Ok(end + 1);
        }
        let limit = MAX_LINE_BYTES as u64 + 1;
        self.input
            .by_ref()
            .take(limit)
            .read_until(b'\n', &mut self.line)
    }

    /// Reads the next `len` bytes as `lines` whole lines at once, when the input's buffer holds
    /// them and `parse` makes something of them (it must refuse anything but non-blank text
    /// lines, `len` bytes ending with a line end); `None` leaves the input as it was, for
    /// [`Lines::advance`] to read line by line. For a layout met in nearly every item of a file
    /// (a deal in the judge's nine lines), where going line by line was most of the reading. Not
    /// for the first line, which may start with a byte-order mark.
    pub(crate) fn take_block<T>(
        &mut self,
        len: usize,
        lines: u64,
        parse: impl FnOnce(&[u8]) -> Option<T>,
    ) -> io::Result<Option<T>> {
        if self.number == 0 || len == 0 {
            return Ok(None);
        }
        let buffered = self.input.fill_buf()?;
        let Some(block) = buffered.get(..len) else {
            return Ok(None);
        };
        let Some(value) = parse(block) else {
            return Ok(None);
        };
        // The block's last line is now the current one, as if read by `advance`.
        let last = block
            .get(..len - 1)
            .and_then(|head| memchr::memrchr(b'\n', head))
            .map_or(0, |end| end + 1);
        self.line.clear();
        self.line.extend_from_slice(&block[last..]);
        self.start = self.read + last as u64;
        self.read += len as u64;
        self.number += lines;
        self.input.consume(len);
        Ok(Some(value))
    }

    /// The current line's bytes, with its line ending.
    /// Bytes taken from the input so far: where the next line starts.
    pub(crate) fn position(&self) -> u64 {
        self.read
    }

    pub(crate) fn line(&self) -> &[u8] {
        &self.line
    }

    /// The current line's 1-based number (0 before the first).
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Where the current line starts, in bytes from where reading began; at the end of the
    /// input, the input's length.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// Lines before the current line's start (all the lines read, at the end of the input).
    pub(crate) fn before(&self) -> u64 {
        match self.read > self.start {
            true => self.number - 1,
            false => self.number,
        }
    }

    pub(crate) fn get_ref(&self) -> &R {
        &self.input
    }
}

/// What makes `line` not text, if anything: a NUL byte (never in a text file, always in a binary
/// one) or bytes that are not UTF-8. Lines are nearly always ASCII, which is checked first.
fn not_text(line: &[u8]) -> Option<String> {
    // One pass for the usual line (a few dozen bytes, none NUL, all ASCII): cheaper than the two
    // searches below, whose setup costs more than such a line.
    // Without a short cut, so that it runs on whole vectors: NUL and non-ASCII bytes are the
    // ones outside 1..=127.
    if !line
        .iter()
        .fold(false, |odd, &b| odd | (b.wrapping_sub(1) > 126))
    {
        return None;
    }
    if let Some(at) = memchr::memchr(0, line) {
        return Some(format!("a NUL byte at byte {}", at + 1));
    }
    if line.is_ascii() {
        return None;
    }
    std::str::from_utf8(line)
        .err()
        .map(|e| format!("bytes that are not UTF-8 at byte {}", e.valid_up_to() + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_lines_are_skipped_but_counted() {
        let mut lines = Lines::new(&b"\xef\xbb\xbfa\n\n  \t\r\nb c\r\n\nd"[..]);
        let mut seen = Vec::new();
        while lines.advance().is_ok_and(|more| more) {
            seen.push((
                lines.number(),
                String::from_utf8_lossy(lines.line()).into_owned(),
            ));
        }
        assert_eq!(
            seen,
            [
                (1, "a\n".to_owned()),
                (4, "b c\r\n".to_owned()),
                (6, "d".to_owned())
            ]
        );
    }

    #[test]
    fn a_line_longer_than_the_limit_is_an_error_naming_it() {
        let mut text = b"a\n\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES));
        text.extend(b"\nb\n");
        let mut lines = Lines::new(&text[..]);
        assert!(lines.advance().is_ok_and(|more| more));
        let error = lines.advance().err();
        let message = error.as_ref().map(ToString::to_string).unwrap_or_default();
        assert_eq!(error.map(|e| e.kind()), Some(io::ErrorKind::InvalidData));
        assert!(
            message.starts_with("line 3 is longer than 1048576 bytes"),
            "{message}"
        );
        assert!(lines.line().len() <= MAX_LINE_BYTES + 1);

        // A line exactly at the limit, its newline included, is read.
        let mut text = vec![b'y'; MAX_LINE_BYTES - 1];
        text.push(b'\n');
        let mut lines = Lines::new(&text[..]);
        assert!(lines.advance().is_ok_and(|more| more));
        assert_eq!(lines.line().len(), MAX_LINE_BYTES);
    }

    #[test]
    fn a_byte_order_mark_is_dropped_only_at_the_start() {
        let mut lines = Lines::new(&b"x\n\xef\xbb\xbfy\n"[..]);
        assert!(lines.advance().is_ok_and(|more| more));
        assert!(lines.advance().is_ok_and(|more| more));
        assert_eq!(lines.line(), b"\xef\xbb\xbfy\n");
        assert!(lines.advance().is_ok_and(|more| !more));
    }

    /// Rough edge 8: a binary file is refused at the first line that is not text, once.
    #[test]
    fn a_line_that_is_not_text_is_an_error_naming_it() {
        for (text, says) in [
            (
                &b"a\n\nb\0c\nd\n"[..],
                "line 3 is not text (a NUL byte at byte 2)",
            ),
            (
                b"a\nb \xd6\n",
                "line 2 is not text (bytes that are not UTF-8 at byte 3)",
            ),
        ] {
            let mut lines = Lines::new(text);
            let mut error = None;
            loop {
                match lines.advance() {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
            let error = error.map(|e| (e.kind(), e.to_string()));
            assert_eq!(
                error.as_ref().map(|e| e.0),
                Some(io::ErrorKind::InvalidData)
            );
            let message = error.map(|e| e.1).unwrap_or_default();
            assert!(message.starts_with(says), "{message}");
        }
        // UTF-8 beyond ASCII is text.
        let mut lines = Lines::new("é\n".as_bytes());
        assert!(lines.advance().is_ok_and(|more| more));
    }
}
