//! Framing a deal file without solving its deals: where each deal's step begins, for `--shard`,
//! which must count every deal before its range (for the global index and the deal numbers of its
//! `error:` lines), and for `patience index`.
//!
//! Framing is the reader itself (`super::DealReader`), reading every step and keeping its mark:
//! where whole deals begin again after a damaged one depends on what the lines hold (see the
//! reader's module docs), so nothing short of reading them frames a file as the reader does. A
//! test holds every mark to the reader's steps, and a reader started at any mark to the rest of
//! the whole reader's steps, on arbitrary and on damaged text.
//!
//! The cost is the reader's fast path (a whole deal in the judge's layout at once): `patience
//! index` over 1,000,000 deals (108 MB, warm page cache) takes 0.22 s of CPU, 1.04x what the
//! framer that only found newlines took (median of 5 pairs on the 2-core AMD EPYC), against about
//! 11 s for solving them on one thread.

use std::io::{self, BufReader, Read};

use crate::mark::{Framed, Mark};

use super::{DealFileError, DealReader};

/// Bytes read at a time.
const CHUNK: usize = 1 << 20;

/// Frames the deals of `input` (see the module docs), which stands at `from` (a step's mark, or
/// the default for its start), calling `seen` with each step's mark once the step is complete,
/// until the input ends or fails, or `seen` returns false. An input that is not text ends the
/// framing with a [`Framed::Failed`] step, as it ends a reader's; a read that fails is an error.
pub fn frame(
    input: impl Read,
    from: &Mark,
    seen: &mut dyn FnMut(Framed) -> bool,
) -> io::Result<()> {
    let mut reader = DealReader::at(BufReader::with_capacity(CHUNK, input), from);
    loop {
        let framed = match reader.next() {
            None => return Ok(()),
            Some(Err(DealFileError::Io(e))) if e.kind() != io::ErrorKind::InvalidData => {
                return Err(e);
            }
            Some(Err(DealFileError::Io(_))) => Framed::Failed(reader.mark()),
            Some(_) => Framed::Item(reader.mark()),
        };
        if !seen(framed) || matches!(framed, Framed::Failed(_)) {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Checks the marks framing finds in `text` against the reader: one per step, each at the
    /// start of its step's first line (a non-blank one, or the failing one) with the lines and
    /// deals before it counted, and a reader started at any mark reading the same rest, step for
    /// step and word for word, as the reader that read everything before it.
    fn marks_hold(text: &[u8]) -> Result<(), String> {
        let marks = framed(text);
        let steps = |reader: DealReader<&[u8]>| -> Vec<String> {
            reader.map(|step| format!("{step:?}")).collect()
        };
        let whole = steps(DealReader::new(text));
        if marks.len() != whole.len() {
            return Err(format!("{} marks for {} steps", marks.len(), whole.len()));
        }
        for (i, framed) in marks.iter().enumerate() {
            let (Framed::Item(mark) | Framed::Failed(mark)) = *framed;
            if i == 0 {
                if mark != Mark::default() {
                    return Err(format!("the first step's mark is {mark:?}"));
                }
                continue;
            }
            let at = mark.offset as usize;
            let starts_a_line = at <= text.len() && (at == 0 || text[at - 1] == b'\n');
            let lines_before = text[..at.min(text.len())]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            let line_end = text[at.min(text.len())..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(text.len(), |n| at + n);
            let blank = text[at.min(text.len())..line_end]
                .iter()
                .all(u8::is_ascii_whitespace);
            if !starts_a_line
                || lines_before as u64 != mark.line
                || mark.item != i as u64
                || (blank && matches!(framed, Framed::Item(_)))
            {
                return Err(format!("step {i}'s mark {mark:?} is not its first line"));
            }
            let rest = steps(DealReader::at(&text[at..], &mark));
            if rest != whole[i..] {
                return Err(format!(
                    "from step {i} ({mark:?}): {rest:?} against {:?}",
                    &whole[i..]
                ));
            }
        }
        Ok(())
    }

    fn framed(text: &[u8]) -> Vec<Framed> {
        let mut marks = Vec::new();
        frame(text, &Mark::default(), &mut |f| {
            marks.push(f);
            true
        })
        .unwrap();
        marks
    }

    const SAMPLE: &str = "AS 9S 6C KS\nJC QH AC KH\n7S QD JD KD\nQS TS JS 9H\n6D TD AD 8S\n\
                          QC TH KC 8D\n8C 9D TC 7C\n9C 7H JH 7D\n8H 6S AH 6H\n";

    #[test]
    fn frames_as_the_reader_reads() {
        let one_line = SAMPLE.replace('\n', " ");
        let cases = [
            SAMPLE.repeat(3),
            format!("\n\n{SAMPLE}\r\n  \n{one_line}\n{SAMPLE}"),
            format!("{SAMPLE}AS 9S\n{SAMPLE}"),
            format!("7S 6S / 6C 6H / 7C 6D / / / / / /\n{SAMPLE}x / y\n"),
            format!("\u{feff}{SAMPLE}{SAMPLE}"),
            format!("{SAMPLE}AS\0 9S\n{SAMPLE}"),
            format!("{SAMPLE}{}", &SAMPLE[..30]),
            String::new(),
            "\n \n".to_string(),
        ];
        for text in cases {
            assert_eq!(marks_hold(text.as_bytes()), Ok(()), "{text:?}");
        }
    }

    /// `deals` random deals' lines with `damage` done to them in order: at line `at` (modulo the
    /// lines), 0 takes the line out, 1 writes it twice, 2 puts a stray short line before it, 3 a
    /// blank one, 4 a one-line deal.
    pub(crate) fn damaged(seed: u64, deals: usize, damage: &[(usize, u8)]) -> Vec<String> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut lines: Vec<String> = (0..deals)
            .flat_map(|_| {
                let deal = crate::deal::Deal::shuffled(&mut rng).to_string();
                deal.lines().map(str::to_string).collect::<Vec<_>>()
            })
            .collect();
        for &(at, what) in damage {
            if lines.is_empty() {
                break;
            }
            let at = at % lines.len();
            match what {
                0 => {
                    lines.remove(at);
                }
                1 => lines.insert(at, lines[at].clone()),
                2 => lines.insert(at, "AS 9S".to_string()),
                3 => lines.insert(at, String::new()),
                _ => lines.insert(at, SAMPLE.replace('\n', " ")),
            }
        }
        lines
    }

    proptest! {
        /// Deal files with lines missing, doubled and stray: framing finds each step the reader
        /// reads, however the damage shifts them.
        #[test]
        fn frames_damaged_deal_files_as_the_reader_reads(
            seed in any::<u64>(),
            damage in proptest::collection::vec((0usize..400, 0u8..5), 0..6),
            crlf in any::<bool>(),
        ) {
            let end = if crlf { "\r\n" } else { "\n" };
            let mut text = damaged(seed, 30, &damage).join(end);
            text.push_str(end);
            prop_assert_eq!(marks_hold(text.as_bytes()), Ok(()));
        }

        #[test]
        fn frames_arbitrary_lines_as_the_reader_reads(
            lines in proptest::collection::vec(
                prop_oneof![
                    Just("AS 9S 6C KS".to_string()),
                    Just(String::new()),
                    Just(" \t".to_string()),
                    Just("a / b / c".to_string()),
                    Just(SAMPLE.replace('\n', " ")),
                    Just("\u{feff}x".to_string()),
                    Just("a\0b".to_string()),
                    "[ -~]{0,12}",
                ],
                0..40,
            ),
            crlf in any::<bool>(),
            last in any::<bool>(),
        ) {
            let end = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(end);
            if last {
                text.push_str(end);
            }
            prop_assert_eq!(marks_hold(text.as_bytes()), Ok(()));
        }
    }
}
