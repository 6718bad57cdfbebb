//! The integration tests: one binary with a module per feature, as ripgrep does, so a change
//! compiles and links one test binary instead of one per file. `no_alloc.rs` stays a binary of its
//! own because it installs a counting global allocator.
//!
//! Every module reaches the shared harness as `crate::common` (see `common/mod.rs`).

mod common;

mod analysis;
mod autoscaling;
mod client_lib;
mod clients;
mod cluster;
mod columnar;
mod connections;
mod daemon;
mod daemon_jobs;
mod daemon_process;
mod engine;
mod hardening;
mod health;
mod hostile;
mod http_api;
mod inputs;
mod job_queue;
mod json_cli;
mod layout;
mod long_jobs;
mod metrics;
mod monitoring;
mod network;
mod protocols;
mod proxies;
mod python_package;
mod rps;
mod rps_cli;
mod rps_daemon;
mod security;
mod shards;
mod solve_cli;
mod storage;
mod storage_faults;
mod tenants;
mod timers;
mod traces;
mod ui;
