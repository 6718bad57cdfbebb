//! `--shard K/N`: which items of the whole input (every file given, in order) shard K answers,
//! and where its readers start.
//!
//! # The boundaries
//! The inputs are taken as one run of S bytes (their sizes added, in order). Shard K owns the
//! bytes from `K*S/N` to `(K+1)*S/N` (rounded down; the last shard owns the rest), and answers
//! every item whose step *begins* there: the item's first line (a file's first item begins at
//! the file's start). Every item begins in exactly one range, so the shards' items tile the
//! input, in order, and their outputs concatenated in K order are one unsharded run's. Ranges
//! are equal in bytes, so shards are nearly equal in items wherever items are of about one size.
//!
//! To print the global `index` and the `error:` lines' deal and line numbers, shard K must know
//! how many items and lines come before its first item: it frames the bytes before its range
//! (`Items::frame`: newlines and each deal's first line, no parsing, no solving), then reads its
//! own items with the game's reader started at the first one (`Items::resumed`). So shard K reads
//! `(K+1)/N` of the input's bytes, its range included, and N shards read `(N+1)/2` times the
//! input: framing is cheap beside solving (docs/shards.md has the figures).

use std::io;

use serde::{Deserialize, Serialize};

use super::index;
use super::input::{Input, Reader};
use super::parquet_in::{self, InputFormat};
use crate::items::Items;
use crate::jobs::store::location::Location;
use crate::mark::{Framed, Mark};

/// Why `--shard` cannot plan its share of the inputs: an input that is not a regular,
/// uncompressed file, or one that cannot be read; each names the input once.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error(
        "--shard {shard} needs its inputs as files: the shards' ranges are set by their sizes, \
         which standard input does not have (save it to a file first)"
    )]
    Stdin { shard: Shard },
    #[error(
        "--shard {shard} needs its inputs as regular files, whose sizes set the shards' ranges: \
         {name}: {why}; save it to a file first"
    )]
    Stream {
        shard: Shard,
        name: String,
        why: io::Error,
    },
    #[error("--shard needs the size of {name}")]
    Size {
        name: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "--shard {shard} needs uncompressed inputs: {name} is {codec}-compressed, and a shard \
         reads its range from the middle of the file (decompress it first)"
    )]
    Compressed {
        shard: Shard,
        name: String,
        codec: &'static str,
    },
    #[error("cannot open {name}")]
    Open {
        name: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot read {name}")]
    Read {
        name: String,
        #[source]
        source: io::Error,
    },
    /// A Parquet input whose rows cannot be counted from its footer.
    #[error("--shard {shard} counts the rows of {name} from its footer: {why}")]
    Parquet {
        shard: Shard,
        name: String,
        why: String,
    },
}

/// `--shard K/N`: the K-th of N shards, K from 0 (as a Kubernetes Indexed Job's
/// `JOB_COMPLETION_INDEX` counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The parser of `--shard`: `K/N` with N at least 1 and K below N.
pub fn parse_shard(text: &str) -> Result<Shard, String> {
    let wanted = "use K/N, shard K of N counted from 0 (0/4, 1/4, 2/4 and 3/4 make a whole run)";
    let (k, n) = text
        .trim()
        .split_once('/')
        .ok_or_else(|| format!("{text:?} is not K/N; {wanted}"))?;
    let number = |s: &str| s.trim().parse::<u64>().ok();
    match (number(k), number(n)) {
        (Some(index), Some(count)) if count >= 1 && index < count => Ok(Shard { index, count }),
        (Some(index), Some(count)) if count >= 1 => Err(format!(
            "shard {index} of {count} does not exist: K goes from 0 to {}; {wanted}",
            count - 1
        )),
        _ => Err(format!("{text:?} is not K/N; {wanted}")),
    }
}

/// A run of consecutive items of one input that a shard reads.
#[derive(Clone, Debug)]
pub struct Segment {
    /// Which input, in the order given.
    pub input: usize,
    /// Where its first item's step begins.
    pub at: Mark,
    /// Its items, and whether it reads on to the end of the input (whose failure, if it fails,
    /// is this shard's to report) rather than stopping after them.
    pub items: u64,
    pub to_end: bool,
    /// Bytes of the shard's range before `at`, for the progress.
    pub before: u64,
}

/// What a shard reads, and where its part sits in the whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    pub shard: Shard,
    /// The bytes whose items it answers: `start..end` of `total`, the inputs' sizes added.
    pub start: u64,
    pub end: u64,
    pub total: u64,
    /// The whole input's index of its first item, and how many it answers.
    pub first: u64,
    pub items: u64,
}

/// A shard's plan: its range, and the segments its readers read.
#[derive(Clone, Debug)]
pub struct ShardPlan {
    pub range: Range,
    pub sizes: Vec<u64>,
    pub segments: Vec<Segment>,
}

/// Frames `inputs` up to the end of `shard`'s range with the game's framing `R` and plans what
/// the shard reads; a file with an index for `answers` (`patience index`) is skipped or framed
/// from its last mark before the range. The inputs must be regular files: their sizes set the
/// ranges. A Parquet input (by `format`, or its first bytes) is not framed: its footer counts its
/// rows, each placed in its bytes by [`parquet_in::row_at`].
pub fn plan<R: Items<Reader>>(
    inputs: &[Input],
    shard: Shard,
    answers: &str,
    format: InputFormat,
) -> Result<ShardPlan, ShardError> {
    let mut sizes = Vec::with_capacity(inputs.len());
    let mut parquet = Vec::with_capacity(inputs.len());
    for input in inputs {
        if input.is_stdin() {
            return Err(ShardError::Stdin { shard });
        }
        let name = input.name();
        match input.exact_size() {
            Ok(size) => sizes.push(size),
            Err(why) if why.kind() == io::ErrorKind::Unsupported => {
                return Err(ShardError::Stream { shard, name, why });
            }
            Err(source) => return Err(ShardError::Size { name, source }),
        }
        let place = input.location();
        parquet.push(place.is_some_and(|at| parquet_in::is_parquet(at, format)));
        if parquet.last() == Some(&true) {
            continue;
        }
        match input.codec() {
            Ok(None) => {}
            Ok(Some(codec)) => {
                return Err(ShardError::Compressed {
                    shard,
                    name,
                    codec: codec.name(),
                });
            }
            Err(source) => return Err(ShardError::Read { name, source }),
        }
    }
    let total: u64 = sizes.iter().sum();
    let cut = |k: u64| (u128::from(k) * u128::from(total) / u128::from(shard.count)) as u64;
    let start = cut(shard.index);
    let end = match shard.index + 1 == shard.count {
        true => u64::MAX,
        false => cut(shard.index + 1),
    };
    let (mut first, mut items) = (0u64, 0u64);
    let mut segments = Vec::new();
    let mut base = 0u64;
    for (i, input) in inputs.iter().enumerate() {
        if base >= end {
            break;
        }
        if parquet[i] {
            let rows = input
                .location()
                .ok_or_else(|| input.name())
                .and_then(|place| parquet_in::rows_in(place, sizes[i]))
                .map_err(|why| ShardError::Parquet {
                    shard,
                    name: input.name(),
                    why,
                })?;
            let size = sizes[i];
            let from = parquet_in::first_row_from(start.saturating_sub(base), rows, size);
            let to = match end {
                u64::MAX => rows,
                end => parquet_in::first_row_from(end.saturating_sub(base), rows, size),
            };
            first += from;
            if from < to {
                let at = base + parquet_in::row_at(from, rows, size);
                segments.push(Segment {
                    input: i,
                    at: Mark {
                        offset: at - base,
                        item: from,
                        ..Mark::default()
                    },
                    items: to - from,
                    to_end: to == rows,
                    before: at - start,
                });
                items += to - from;
            }
            if to < rows {
                break;
            }
            base += size;
            continue;
        }
        let index = input
            .location()
            .and_then(Location::file)
            .and_then(|path| index::load(path, answers));
        let from = match &index {
            // A file wholly before the range: its items are counted, not framed. (Strictly
            // before: a case file's last step may begin at its end.)
            Some(index) if base + sizes[i] < start => {
                first += index.steps;
                base += sizes[i];
                continue;
            }
            Some(index) => {
                let (mark, steps) = index.before(start.saturating_sub(base));
                first += steps;
                mark
            }
            None => Mark::default(),
        };
        let reader = input
            .open_at(from.offset)
            .map_err(|source| ShardError::Open {
                name: input.name(),
                source,
            })?;
        let mut segment: Option<Segment> = None;
        let mut past = false;
        R::frame(reader, &from, &mut |framed| {
            let (mark, item) = match framed {
                Framed::Item(mark) => (mark, true),
                Framed::Failed(mark) => (mark, false),
            };
            let at = base + mark.offset;
            if at >= end {
                past = true;
                return false;
            }
            if at < start {
                first += u64::from(item);
                return true;
            }
            let segment = segment.get_or_insert(Segment {
                input: i,
                at: mark,
                items: 0,
                to_end: false,
                before: at - start,
            });
            segment.items += u64::from(item);
            items += u64::from(item);
            true
        })
        .map_err(|source| ShardError::Read {
            name: input.name(),
            source,
        })?;
        if let Some(mut segment) = segment {
            segment.to_end = !past;
            segments.push(segment);
        }
        if past {
            break;
        }
        base += sizes[i];
    }
    Ok(ShardPlan {
        range: Range {
            shard,
            start,
            end: end.min(total),
            total,
            first,
            items,
        },
        sizes,
        segments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_k_of_n_counted_from_zero() {
        assert_eq!(parse_shard("3/8"), Ok(Shard { index: 3, count: 8 }));
        assert_eq!(parse_shard(" 0 / 1 "), Ok(Shard { index: 0, count: 1 }));
        let said = |text| parse_shard(text).unwrap_err();
        assert!(said("8/8").starts_with("shard 8 of 8 does not exist: K goes from 0 to 7"));
        assert!(said("1/0").starts_with("\"1/0\" is not K/N"));
        assert!(said("3").starts_with("\"3\" is not K/N"));
        assert!(said("-1/4").starts_with("\"-1/4\" is not K/N"));
    }

    /// Each failure in the words `--shard` has always said it in (written out here by hand, as
    /// the format strings before the errors were typed said them).
    #[test]
    fn shard_errors_say_what_they_always_said() {
        let shard = Shard { index: 1, count: 4 };
        let missing = || io::Error::from(io::ErrorKind::NotFound);
        let cases: Vec<(ShardError, &str)> = vec![
            (
                ShardError::Stdin { shard },
                "--shard 1/4 needs its inputs as files: the shards' ranges are set by their \
                 sizes, which standard input does not have (save it to a file first)",
            ),
            (
                ShardError::Size {
                    name: "deals.in".into(),
                    source: missing(),
                },
                "--shard needs the size of deals.in: entity not found",
            ),
            (
                ShardError::Compressed {
                    shard,
                    name: "deals.in.gz".into(),
                    codec: "gzip",
                },
                "--shard 1/4 needs uncompressed inputs: deals.in.gz is gzip-compressed, and a \
                 shard reads its range from the middle of the file (decompress it first)",
            ),
            (
                ShardError::Open {
                    name: "deals.in".into(),
                    source: missing(),
                },
                "cannot open deals.in: entity not found",
            ),
            (
                ShardError::Read {
                    name: "deals.in".into(),
                    source: missing(),
                },
                "cannot read deals.in: entity not found",
            ),
        ];
        for (error, said) in cases {
            assert_eq!(crate::jobs::in_full(&error), said);
        }
    }
}
