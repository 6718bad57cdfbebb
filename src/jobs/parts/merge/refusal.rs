//! Why the parts given to `merge` do not make a whole, in the words `merge` says it.

use std::path::PathBuf;

use crate::jobs::parts::part::PartSum;
use crate::jobs::source::shard::Shard;
use crate::jobs::store::location::Location;

/// Why the parts given do not make a whole, before anything is written (or, for
/// [`MergeRefusal::ChangedWhileMerged`], while it is): each names the part and what to do, and the
/// command exits 2. The storage's own failures stay errors of their own.
#[derive(Debug, thiserror::Error)]
pub enum MergeRefusal {
    #[error("--output {0} is also one of the parts")]
    OutputIsAPart(Location),
    #[error("{0} is given twice: give each part once")]
    GivenTwice(Location),
    #[error("{0} is missing: run its shard (with --output {0})")]
    Missing(Location),
    #[error(
        "{place} is incomplete: it has no completion record ({done}), so its shard has not \
         finished; run it again with --resume to finish it"
    )]
    Incomplete { place: Location, done: Location },
    /// Its bytes are not those its completion record describes.
    #[error(
        "{place} is not the part its completion record describes: it holds {} bytes in {} lines \
         (CRC-32 {:08x}) where {done} says {} bytes in {} lines ({:08x}); it was cut or changed \
         after its shard ended: run shard {shard} again with --resume",
        .held.bytes, .held.lines, .held.crc32, .said.bytes, .said.lines, .said.crc32
    )]
    NotAsRecorded {
        place: Location,
        held: PartSum,
        done: Location,
        said: PartSum,
        shard: Shard,
    },
    #[error(
        "{} is being written by a run right now (it holds {}): merge once it has ended",
        .part.display(),
        .lock.display()
    )]
    BeingWritten { part: PathBuf, lock: PathBuf },
    #[error("no parts to merge")]
    NoParts,
    #[error("{part} is a part of another job: it holds {theirs}, where {first} holds {ours}")]
    AnotherJob {
        part: Location,
        theirs: String,
        first: Location,
        ours: String,
    },
    #[error("{part} names shard {index} of {count}")]
    NoSuchShard {
        part: Location,
        index: u64,
        count: u64,
    },
    #[error("{first} and {second} are both shard {shard}: give each part once")]
    SameShard {
        first: Location,
        second: Location,
        shard: Shard,
    },
    /// Shards no part is: the first few (up to ten), and how many more.
    #[error("{}", missing_shards(.shards, *.more, *.count))]
    MissingShards {
        shards: Vec<u64>,
        more: u64,
        count: u64,
    },
    #[error(
        "{part} (shard {shard}) starts at byte {start} and item {first}, where the shards before \
         it end at byte {byte} and item {item}: the parts do not tile the input"
    )]
    Gap {
        part: Location,
        shard: Shard,
        start: u64,
        first: u64,
        byte: u64,
        item: u64,
    },
    #[error("the parts end at byte {byte} of the input's {total}: they do not tile it")]
    Short { byte: u64, total: u64 },
    #[error("{0} changed while it was merged: merge again")]
    ChangedWhileMerged(Location),
    #[error(
        "the parts are Parquet, which merges into a file, not standard output: add --output \
         NAME.parquet"
    )]
    ParquetToStandardOutput,
}

/// [`MergeRefusal::MissingShards`] in words.
fn missing_shards(shards: &[u64], more: u64, count: u64) -> String {
    let (s, are, them) = match shards.len() {
        1 => ("", "is", "it"),
        _ => ("s", "are", "each"),
    };
    let listed = shards
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let more = match more {
        0 => String::new(),
        n => format!(" (and {n} more)"),
    };
    format!(
        "shard{s} {listed}{more} of {count} {are} missing: none of the parts given is shard{s} \
         {listed}; run {them} with --shard K/{count} --output PART, and give every part"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(name: &str) -> Location {
        Location::File(PathBuf::from(name))
    }

    /// Each refusal in the words `merge` has always used (written out here by hand, as the
    /// format strings before the refusals were typed said them), the few no other test reaches
    /// included.
    #[test]
    fn refusals_say_what_they_always_said() {
        let shard = |index, count| Shard { index, count };
        let sum = |bytes, lines, crc32| PartSum {
            bytes,
            lines,
            crc32,
        };
        let cases: Vec<(MergeRefusal, &str)> = vec![
            (
                MergeRefusal::OutputIsAPart(at("all.txt")),
                "--output all.txt is also one of the parts",
            ),
            (
                MergeRefusal::BeingWritten {
                    part: "p0.txt".into(),
                    lock: "p0.txt.lock".into(),
                },
                "p0.txt is being written by a run right now (it holds p0.txt.lock): merge once it \
                 has ended",
            ),
            (
                MergeRefusal::NoSuchShard {
                    part: at("p9.txt"),
                    index: 9,
                    count: 4,
                },
                "p9.txt names shard 9 of 4",
            ),
            (
                MergeRefusal::Gap {
                    part: at("p2.txt"),
                    shard: shard(2, 4),
                    start: 700,
                    first: 70,
                    byte: 650,
                    item: 65,
                },
                "p2.txt (shard 2/4) starts at byte 700 and item 70, where the shards before it \
                 end at byte 650 and item 65: the parts do not tile the input",
            ),
            (
                MergeRefusal::Short {
                    byte: 900,
                    total: 1000,
                },
                "the parts end at byte 900 of the input's 1000: they do not tile it",
            ),
            (
                MergeRefusal::ChangedWhileMerged(at("p1.txt")),
                "p1.txt changed while it was merged: merge again",
            ),
            (
                MergeRefusal::ParquetToStandardOutput,
                "the parts are Parquet, which merges into a file, not standard output: add \
                 --output NAME.parquet",
            ),
            (
                MergeRefusal::MissingShards {
                    shards: vec![3],
                    more: 0,
                    count: 4,
                },
                "shard 3 of 4 is missing: none of the parts given is shard 3; run it with --shard \
                 K/4 --output PART, and give every part",
            ),
            (
                MergeRefusal::MissingShards {
                    shards: vec![0, 2],
                    more: 5,
                    count: 9,
                },
                "shards 0, 2 (and 5 more) of 9 are missing: none of the parts given is shards 0, \
                 2; run each with --shard K/9 --output PART, and give every part",
            ),
            (
                MergeRefusal::NotAsRecorded {
                    place: at("p1.txt"),
                    held: sum(10, 2, 0xabc),
                    done: at("p1.txt.done.json"),
                    said: sum(12, 2, 0x1234_5678),
                    shard: shard(1, 2),
                },
                "p1.txt is not the part its completion record describes: it holds 10 bytes in 2 \
                 lines (CRC-32 00000abc) where p1.txt.done.json says 12 bytes in 2 lines \
                 (12345678); it was cut or changed after its shard ended: run shard 1/2 again \
                 with --resume",
            ),
        ];
        for (refusal, said) in cases {
            assert_eq!(refusal.to_string(), said);
        }
    }
}
