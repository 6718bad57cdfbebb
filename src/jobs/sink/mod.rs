//! Stage 4, the sink: where answers go.
//!
//! - Comes in: answers in input order, each a line (text, JSON) or a row, and where the output
//!   is.
//! - Goes out: the printer that numbers and renders them (`output.rs`) into standard output, or
//!   as whole lines (`lines.rs`) or Parquet row groups (`parquet_out.rs`) into the output's one
//!   [`tail::Tail`]: a file (`tail/file.rs`) or an object's multipart upload (`upload.rs`), kept
//!   durable by a keeper thread that answers SIGINT and SIGTERM (`signals.rs`); the run record
//!   beside the output (`run_record.rs`) and `--resume` from what an output holds (`resume.rs`).

pub mod lines;
pub mod output;
pub mod parquet_out;
pub mod resume;
pub mod run_record;
pub mod signals;
pub mod tail;
pub mod upload;
