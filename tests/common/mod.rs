//! The one test harness, shared by every test binary (`mod common;`), so that each test file
//! holds tests and not plumbing. One module per job:
//!
//! - [`daemon`]: a real `patience serve` process ([`Daemon`]): start it with arguments,
//!   environment and an optional open-file limit, on port 0 or a given address; its address and
//!   start line, its log lines (`line_with`), signals, its exit and exit code, its memory and CPU
//!   from /proc; a metrics scrape; dead addresses. The benches include this file too.
//! - [`server`]: the server in this process on the test's listener or port 0 ([`TestServer`]),
//!   and its [`config`]; stand-ins (other tonic services) on threads of their own ([`serve`]).
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
//! - [`delay`]: the one relay ([`DelayProxy`]): puts a daemon far away or cuts it off (latency
//!   each way, partitions that hold the sockets and forward nothing, every connection severed),
//!   and keeps a daemon's address while the daemon behind it is restarted on a port of its own.
//! - [`wait`]: waiting for an event with a hang guard ([`wait_until`], [`wait_for`]), the one
//!   polling loop of the tests.
//! - [`proxy`]: a real nginx or HAProxy in front of daemons, from a configuration template of
//!   `deploy/proxies/` or the test's own, on a free port ([`Proxy`]).
//! - [`otlp`]: OpenTelemetry from PyPI (`tests/otel.py`): an OTLP receiver ([`Collector`]) and a
//!   caller traced with the Python SDK ([`traced_call`]).
//!
//! - [`columnar`]: pyarrow and DuckDB from PyPI (`tests/columnar.py`), reading the Parquet files
//!   and Arrow streams patience writes and writing the Parquet it reads ([`Columnar`]).
//! - [`s3`]: a real S3-compatible server (moto) on a loopback port, and boto3 to put and get
//!   its objects ([`S3Server`]); IAM users with policies of the test's, when moto checks them.
//! - [`throttle`]: a relay in front of it that answers the next N connections `503 SlowDown`, as
//!   S3 throttles ([`Throttle`]).
//!
//! Everything is re-exported here: `use common::{Daemon, corpus, run};`.
#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a different part of the harness"
)]

pub mod cli;
pub mod columnar;
pub mod daemon;
pub mod data;
pub mod delay;
pub mod fifo;
pub mod jobs;
pub mod otlp;
pub mod process;
pub mod proxy;
pub mod requests;
pub mod s3;
pub mod scratch;
pub mod server;
pub mod sniff;
pub mod throttle;
pub mod tls;
pub mod wait;
pub mod wheel;

pub use cli::*;
pub use columnar::*;
pub use daemon::*;
pub use data::*;
pub use delay::*;
pub use fifo::*;
pub use jobs::*;
pub use otlp::*;
pub use proxy::*;
pub use requests::*;
pub use s3::*;
pub use scratch::*;
pub use server::*;
pub use sniff::*;
pub use throttle::*;
pub use tls::*;
pub use wait::*;
