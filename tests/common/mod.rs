//! The one test harness, shared by every test binary (`mod common;`), so that each test file
//! holds tests and not plumbing. One module per job:
//!
//! - [`daemon`]: a real `patience serve` process ([`Daemon`]): start it with arguments,
//!   environment and an optional open-file limit, on a free port or a given one; its address and
//!   start line, its log lines (`line_with`), signals, its exit and exit code, its memory and CPU
//!   from /proc; a metrics scrape; free and dead ports. The benches include this file too.
//! - [`server`]: the server in this process on a free port ([`TestServer`]), and its [`config`].
//! - [`cli`]: `patience` subcommands run as a user would ([`patience`], [`run`], [`Output`]),
//!   and clients that keep running while the test reads their output ([`Running`]) or types their
//!   input ([`Typed`]); the documentation's `$` examples, run and compared ([`doc_examples`],
//!   [`doc_section`]).
//! - [`scratch`]: a directory for a test's own files, removed when the test passes
//!   ([`Scratch`]).
//! - [`data`]: the reference data of `tests/data` ([`data`], [`deals`], [`answers`],
//!   [`corpus`], [`TOLERANCE`]).
//! - [`requests`]: building `SolveRequest`s ([`wire`], [`request`], [`requests`]) and reading
//!   the answers ([`stream_all`], [`probability`]).
//! - [`tls`]: throwaway certificate authorities ([`Authority`]).
//! - [`sniff`]: a relay in front of a daemon that counts the gRPC messages each way by their
//!   compressed flag ([`Sniffer`]), to see a foreign client's compression on the wire.
//! - [`delay`]: a relay that puts a daemon far away or cuts it off ([`DelayProxy`]): latency
//!   each way, and partitions that hold the sockets and forward nothing.
//! - [`proxy`]: a real nginx or HAProxy in front of daemons, from a configuration template of
//!   `deploy/proxies/` or the test's own, on a free port ([`Proxy`]).
//!
//! Everything is re-exported here: `use common::{Daemon, corpus, run};`.
#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a different part of the harness"
)]

pub mod cli;
pub mod daemon;
pub mod data;
pub mod delay;
pub mod proxy;
pub mod requests;
pub mod scratch;
pub mod server;
pub mod sniff;
pub mod tls;

pub use cli::*;
pub use daemon::*;
pub use data::*;
pub use delay::*;
pub use proxy::*;
pub use requests::*;
pub use scratch::*;
pub use server::*;
pub use sniff::*;
pub use tls::*;
