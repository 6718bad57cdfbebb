//! What a Parquet output's resume bookkeeping writes: prints figures, asserts nothing.
//!
//! `cargo bench --bench parquet_record` (options after `--`: `--rows N,N,...`, 10^6 and 10^8 by
//! default).
//!
//! For each N, N answers go through the library's Parquet output (`jobs::parquet_out::open`, as
//! `solve --format parquet --output` opens it; no solving, so the figures are the bookkeeping's
//! own) to a file in a scratch directory. Printed side by side: the row groups, the bytes the
//! groups' log (`NAME.resume.groups`, appended once per row group) and the run record
//! (`NAME.resume.json`, written once) hold at the end, which is every byte they were written,
//! per row group and in all; and the bytes a record holding the whole footer, rewritten at every
//! row group as before the log, would have written: the base64 of the footer of the first k row
//! groups, for every k, encoded from the output's own footer (plus the record's other fields each
//! time).

mod support;

use std::path::PathBuf;
use std::time::Instant;

use base64::Engine as _;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader, ParquetMetaDataWriter};
use patience::jobs::sink::parquet_out::write_answers;
use support::{Flags, TempDir};

fn main() {
    let flags = Flags::from_env();
    let counts: Vec<u64> = flags
        .get("--rows", "1000000,100000000".to_string())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let dir = TempDir::new("parquet-record");
    println!(
        "{:>11} {:>7} {:>12} {:>10} {:>12} {:>16} {:>10} {:>8}",
        "rows",
        "groups",
        "log bytes",
        "per group",
        "record bytes",
        "whole-footer rec",
        "per group",
        "seconds"
    );
    for rows in counts {
        let output = dir.join(&format!("answers-{rows}.parquet"));
        let started = Instant::now();
        write(&output, rows);
        let seconds = started.elapsed().as_secs_f64();
        let log = len(&PathBuf::from(format!(
            "{}.resume.groups",
            output.display()
        )));
        let record = len(&PathBuf::from(format!("{}.resume.json", output.display())));
        let (groups, before) = whole_footer_records(&output, record);
        println!(
            "{rows:>11} {groups:>7} {log:>12} {:>10.0} {record:>12} {before:>16} {:>10.0} {seconds:>8.1}",
            log as f64 / groups.max(1) as f64,
            before as f64 / groups.max(1) as f64,
        );
        let _ = std::fs::remove_file(&output);
    }
}

/// `rows` answers into the Parquet file `output`, as a run writes them: probabilities of a
/// spread a real run's have, so the pages compress as theirs do.
fn write(output: &std::path::Path, rows: u64) {
    let probabilities =
        (0..rows).map(|i| (i.wrapping_mul(2_654_435_761) % 1_000_003) as f64 / 1_000_003.0);
    if let Err(e) = write_answers(output, probabilities) {
        panic!("{}: {e}", output.display());
    }
}

/// The row groups of `output`, and the bytes a run record holding the footer so far would have
/// written, rewritten whole at each row group (`record` bytes of other fields each time).
fn whole_footer_records(output: &std::path::Path, record: u64) -> (usize, u64) {
    let file = std::fs::File::open(output).expect("the output");
    let metadata = ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .expect("its footer");
    let groups = metadata.row_groups().to_vec();
    let mut bytes = 0u64;
    for k in 1..=groups.len() {
        let mut file_metadata = metadata.file_metadata().clone();
        let rows = groups[..k].iter().map(|g| g.num_rows()).sum();
        file_metadata = parquet::file::metadata::FileMetaData::new(
            file_metadata.version(),
            rows,
            file_metadata.created_by().map(str::to_string),
            file_metadata.key_value_metadata().cloned(),
            file_metadata.schema_descr_ptr(),
            None,
        );
        let so_far = ParquetMetaData::new(file_metadata, groups[..k].to_vec());
        let mut footer = Vec::new();
        ParquetMetaDataWriter::new(&mut footer, &so_far)
            .finish()
            .expect("a footer");
        let encoded = base64::engine::general_purpose::STANDARD.encode(&footer);
        bytes += record + encoded.len() as u64;
    }
    (groups.len(), bytes)
}

fn len(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}
