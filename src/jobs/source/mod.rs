//! Stage 3, the source: where items come from.
//!
//! - Comes in: the inputs' places (from the store) and how to read them (text or Parquet, a
//!   shard of them).
//! - Goes out: batches of numbered items for the solvers (`batches.rs`), read from the inputs as
//!   they are (`input.rs`: gzip and zstd by their bytes, a pipe read once) or as Parquet rows
//!   (`parquet_in.rs`); `--shard`'s share of them, planned from the inputs' sizes
//!   (`shard.rs`), and the index that lets a shard skip what comes before it (`index.rs`, with
//!   `patience index`).

pub mod batches;
pub mod index;
pub mod input;
pub mod parquet_in;
pub mod shard;
