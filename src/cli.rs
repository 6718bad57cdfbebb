//! The `patience` command line: flags are parsed here and handed to one module per subcommand.

use std::ffi::OsString;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory as _, Parser, Subcommand};

use crate::jobs;

mod client;
mod daemon_jobs;
mod generate;
mod health;
mod job_flags;
mod remote;
mod rps;
mod serve;
mod solve;
mod traced;
mod values;

use values::{
    NO_MAX, at_least_one, parse_duration, parse_listen_addr, parse_optional_bytes,
    parse_optional_duration, whole,
};

pub use crate::jobs::outcome::ExitStatus;
pub use crate::jobs::report::progress::ProgressMode;
pub use crate::render::OutputFormat;
pub use health::HealthArgs;
pub use job_flags::{JobFlags, StorageFlags};
pub use remote::{ClientTlsArgs, RemoteArgs};
pub use values::{MaybeBytes, MaybeDuration};

/// Exact win probabilities for Double Patience deals (UVa 1637) and FZU 2145 rock-paper-scissors
/// cases, in-process or on a gRPC daemon.
#[derive(Debug, Parser)]
#[command(name = "patience", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Solve deal files in this process and print one probability per deal, in input order.
    Solve(SolveArgs),
    /// Run the gRPC daemon (patience.v1.Solver and patience.v1.RpsService, with health and
    /// reflection).
    // Boxed: its flags make it the largest variant by far (clippy::large_enum_variant).
    Serve(Box<ServeArgs>),
    /// Stream deal files to a running daemon; prints exactly what `solve` prints.
    Client(ClientArgs),
    /// Write uniformly shuffled deals in the UVa format.
    Gen(GenArgs),
    /// Solve FZU 2145 rock-paper-scissors cases: the chance that Maze is the last one left, with
    /// Fat brother playing to help her; one probability per case, in input order.
    ///
    /// Each round everyone still in shows rock, paper or scissors at once; when exactly two
    /// gestures show, everyone showing the beaten one is out. Maze and the other players pick at
    /// random with their own probabilities, Fat brother by choice. A case file starts with the
    /// number of cases; each case is its number of other players n (at most 15), a line of Maze's
    /// three probabilities (rock, paper, scissors), then n such lines. With --addr the cases are
    /// solved on daemons, with the same output.
    Rps(RpsArgs),
    /// Ask a daemon's gRPC health service how it is, as a probe would; prints the status.
    ///
    /// Exit status: 0 for SERVING; 1 for any other answer (NOT_SERVING: draining, or with work
    /// waiting and no solver thread finishing anything for the daemon's --liveness-timeout;
    /// SERVICE_UNKNOWN for a service it does not serve); 2 when it cannot ask (nothing listening,
    /// no answer within --timeout, TLS or token trouble). The container image's HEALTHCHECK.
    Health(HealthArgs),
    /// Join the parts of a sharded job (`--shard K/N --output PART`, K from 0 to N-1) into the
    /// whole output, in order, once every part is there, complete (its FILE.done.json matches its
    /// bytes), of one job, and tiling the input. Exit status: that of the whole run (0, or 1 when
    /// some item was bad); 2, writing nothing, when a part is missing, incomplete, cut or of
    /// another job, which it names.
    Merge(job_flags::MergeFlags),
    /// Index large input files for `--shard`: FILE.index.json beside each holds its items and,
    /// every 8 MiB, where an item begins, so that a shard skips the files before its range and
    /// reads only its share of the file it begins in (plus at most 8 MiB) instead of framing
    /// everything before it. Used only while FILE keeps its size and modification time.
    Index(job_flags::IndexFlags),
    /// The jobs a daemon runs (serve --jobs-dir): submit one and watch it with a progress bar,
    /// watch, get, list or cancel them.
    Jobs(daemon_jobs::JobsArgs),
}

/// How the daemon writes its logs (to standard error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// What to print for each deal, shared by `solve` and `client`.
#[derive(Clone, Copy, Debug, Args)]
pub struct AnalysisArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Add the probability as an exact fraction in lowest terms (slower); needs --format json.
    #[arg(long)]
    pub exact: bool,
    /// Add every legal first move with the probability after it, best first; needs --format json.
    #[arg(long)]
    pub moves: bool,
    /// Add a winning line (the likeliest for a random player) when there is one; needs
    /// --format json.
    #[arg(long)]
    pub line: bool,
}

impl AnalysisArgs {
    /// The engine options asked for; an error when they cannot be shown in the chosen format.
    pub fn options(&self) -> anyhow::Result<crate::solver::Options> {
        if self.format != OutputFormat::Json && (self.exact || self.moves || self.line) {
            anyhow::bail!(
                "--exact, --moves and --line are shown in JSON only: add --format json \
                 (text lines and Parquet rows hold the probability alone)"
            );
        }
        Ok(crate::solver::Options {
            exact: self.exact,
            moves: self.moves,
            line: self.line,
        })
    }
}

/// Flags of `patience serve`. Each can also come from the environment variable named beside it.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on: IP:PORT, or HOST:PORT resolved once at start (an IPv4 address
    /// first, so `localhost:50051` is 127.0.0.1); port 0 picks a free port (the log says which).
    #[arg(long, env = "PATIENCE_ADDR", default_value = "127.0.0.1:50051", value_parser = parse_listen_addr)]
    pub addr: std::net::SocketAddr,
    /// Solver threads, each with its own table [default: the number of cores].
    #[arg(long, env = "PATIENCE_WORKERS", value_parser = at_least_one)]
    pub workers: Option<NonZeroUsize>,
    /// Largest request message accepted, in bytes (a deal is under 200 bytes).
    #[arg(long, env = "PATIENCE_MAX_MESSAGE_BYTES", value_parser = whole::<usize>(0, NO_MAX), default_value_t = 4 << 20)]
    pub max_message_bytes: usize,
    /// Most deals one request may carry.
    #[arg(long, env = "PATIENCE_MAX_DEALS_PER_REQUEST", value_parser = whole::<usize>(0, NO_MAX), default_value_t = 10_000)]
    pub max_deals_per_request: usize,
    /// Unanswered deals one stream may have before the server stops reading it.
    #[arg(long, env = "PATIENCE_MAX_IN_FLIGHT", value_parser = whole::<usize>(0, NO_MAX), default_value_t = 4_096)]
    pub max_in_flight: usize,
    /// SolveStream calls open at once across all connections (counted from their headers, so
    /// calls that never send count too); more get RESOURCE_EXHAUSTED.
    #[arg(long, env = "PATIENCE_MAX_OPEN_STREAMS", value_parser = whole::<usize>(0, NO_MAX), default_value_t = 1_024)]
    pub max_open_streams: usize,
    /// Solve (unary) calls open at once across all connections, each reading a message of up to
    /// --max-message-bytes; more get RESOURCE_EXHAUSTED.
    #[arg(long, env = "PATIENCE_MAX_OPEN_UNARY", value_parser = whole::<usize>(0, NO_MAX), default_value_t = 64)]
    pub max_open_unary: usize,
    /// Health Watch and reflection streams open at once across all connections (they need no
    /// token and a watch lasts as long as its client); more get RESOURCE_EXHAUSTED.
    #[arg(long, env = "PATIENCE_MAX_OPEN_WATCHES", value_parser = whole::<usize>(0, NO_MAX), default_value_t = 256)]
    pub max_open_watches: usize,
    /// Unanswered deals across all calls; at the limit calls stop being read and new ones get
    /// RESOURCE_EXHAUSTED.
    #[arg(long, env = "PATIENCE_MAX_DEALS_IN_FLIGHT", value_parser = whole::<usize>(0, NO_MAX), default_value_t = 65_536)]
    pub max_deals_in_flight: usize,
    /// Connections served at once; more wait in the listen backlog [default: the open-file
    /// limit less 112 and less --metrics-max-connections, at most 4096].
    #[arg(long, env = "PATIENCE_MAX_CONNECTIONS", value_parser = at_least_one)]
    pub max_connections: Option<NonZeroUsize>,
    /// Connections the kernel holds for each listener until they are accepted, such as while
    /// the daemon is at --max-connections (capped by net.core.somaxconn).
    #[arg(long, env = "PATIENCE_LISTEN_BACKLOG", value_parser = whole::<u32>(1, 65_535), default_value_t = crate::server::DEFAULT_LISTEN_BACKLOG)]
    pub listen_backlog: u32,
    /// A new connection that has not finished its TLS handshake and sent the HTTP/2 preface
    /// within this long is closed.
    #[arg(long, env = "PATIENCE_HANDSHAKE_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub handshake_timeout: std::time::Duration,
    /// Send GOAWAY to a connection with no call open for this long ("off": never).
    #[arg(long, env = "PATIENCE_MAX_CONNECTION_IDLE", default_value = "off", value_parser = parse_optional_duration)]
    pub max_connection_idle: MaybeDuration,
    /// Send GOAWAY to a connection this old, give or take a tenth, so that long-lived clients
    /// spread over new replicas ("off": never).
    #[arg(long, env = "PATIENCE_MAX_CONNECTION_AGE", default_value = "off", value_parser = parse_optional_duration)]
    pub max_connection_age: MaybeDuration,
    /// After the age GOAWAY, close the connection once its calls have had this long ("off":
    /// wait for them).
    #[arg(long, env = "PATIENCE_MAX_CONNECTION_AGE_GRACE", default_value = "off", value_parser = parse_optional_duration)]
    pub max_connection_age_grace: MaybeDuration,
    /// Most concurrent calls on one HTTP/2 connection.
    #[arg(long, env = "PATIENCE_MAX_CONCURRENT_STREAMS", default_value_t = 32, value_parser = whole::<u32>(0, NO_MAX))]
    pub max_concurrent_streams: u32,
    /// HTTP/2 keepalive ping interval (e.g. 60s, 500ms).
    #[arg(long, env = "PATIENCE_KEEPALIVE_INTERVAL", default_value = "60s", value_parser = parse_duration)]
    pub keepalive_interval: std::time::Duration,
    /// How long a keepalive ping may go unanswered before the connection is dropped.
    #[arg(long, env = "PATIENCE_KEEPALIVE_TIMEOUT", default_value = "20s", value_parser = parse_duration)]
    pub keepalive_timeout: std::time::Duration,
    /// On SIGTERM/SIGINT, how long calls in flight may take to finish before they end with
    /// UNAVAILABLE naming the index to resume from.
    #[arg(long, env = "PATIENCE_DRAIN_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub drain_timeout: std::time::Duration,
    /// On SIGTERM/SIGINT, stop reading a stream whose client is still sending after this long,
    /// answer what was read and end it with UNAVAILABLE naming the resume index ("off": serve
    /// it until the drain timeout). For clients that resume elsewhere, like `patience client`.
    #[arg(long, env = "PATIENCE_DRAIN_CUT_AFTER", default_value = "off", value_parser = parse_optional_duration)]
    pub drain_cut_after: MaybeDuration,
    /// Drop the finished results of a stream whose client takes none of them for this long (it
    /// does not read), so that they stop counting against --max-deals-in-flight; the client then
    /// gets RESOURCE_EXHAUSTED naming the index to resume from ("off": never).
    #[arg(long, env = "PATIENCE_STALL_TIMEOUT", default_value = "60s", value_parser = parse_optional_duration)]
    pub stall_timeout: MaybeDuration,
    /// Health for "" (what a liveness probe asks) turns NOT_SERVING while work waits for the
    /// solver threads and none has finished anything for this long, and SERVING again when one
    /// does ("off": never).
    #[arg(long, env = "PATIENCE_LIVENESS_TIMEOUT", default_value = "60s", value_parser = parse_optional_duration)]
    pub liveness_timeout: MaybeDuration,
    /// Serve over TLS with this PEM certificate (chain); needs --tls-key [default: plain text].
    #[arg(long, env = "PATIENCE_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, env = "PATIENCE_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Require client certificates signed by this PEM CA (mutual TLS); needs --tls-cert
    /// [default: any client].
    #[arg(long, env = "PATIENCE_TLS_CLIENT_CA", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// Require `authorization: Bearer <token>` on every Solver call, with the token in this file
    /// (health stays open for probes) [default: no token needed].
    #[arg(long, env = "PATIENCE_AUTH_TOKEN_FILE")]
    pub auth_token_file: Option<PathBuf>,
    /// Keep callers apart: a TOML file of [tenants.NAME] tables, each with token or token_file,
    /// and optional weight (its share of the running jobs, 1), max_queued_jobs and
    /// max_running_jobs. Every Solver and job call then needs one tenant's token; a tenant sees
    /// its own jobs only, kept in DIR/NAME of --jobs-dir (docs/jobs.md#tenants) [default: one
    /// tenant, "default"].
    #[arg(long, env = "PATIENCE_TENANTS", conflicts_with = "auth_token_file")]
    pub tenants: Option<PathBuf>,
    /// Compress each response message of at least this many bytes, with zstd or gzip, for clients
    /// that accept it (grpc-accept-encoding); "off" never compresses responses. Compressed
    /// requests (gzip, zstd) are taken either way.
    #[arg(long, env = "PATIENCE_COMPRESS_MIN_BYTES", default_value = "512", value_parser = parse_optional_bytes)]
    pub compress_min_bytes: MaybeBytes,
    /// Let browsers on this origin call with gRPC-Web (CORS), e.g. https://app.example; repeat
    /// it, or separate origins with commas; "*" allows any [default: none].
    #[allow(
        rustdoc::bare_urls,
        reason = "the comment is the flag's help, where a bare address reads best"
    )]
    #[arg(
        long = "cors-allow-origin",
        env = "PATIENCE_CORS_ALLOW_ORIGIN",
        value_delimiter = ','
    )]
    pub cors_allow_origins: Vec<String>,
    /// Do not serve the analysis board (the page at /); its paths then get 404 like any other
    /// [default: served].
    #[arg(long, env = "PATIENCE_NO_UI")]
    pub no_ui: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics (port 0 picks one; the log says which)
    /// [default: off].
    #[arg(long, env = "PATIENCE_METRICS_ADDR", value_parser = parse_listen_addr)]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Connections to the metrics port at once; more wait in its listen backlog. Counted apart
    /// from --max-connections, whose default leaves them their descriptors.
    #[arg(long, env = "PATIENCE_METRICS_MAX_CONNECTIONS", value_parser = at_least_one, default_value = "16")]
    pub metrics_max_connections: NonZeroUsize,
    /// Log format; filter with RUST_LOG (default: info).
    #[arg(long, env = "PATIENCE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Run jobs (patience.v1.JobService, /v1/jobs): their local inputs and outputs are paths in
    /// DIR, and DIR/.patience-jobs keeps their records, so a daemon started again on DIR goes on
    /// with the jobs it had not finished [default: no jobs].
    #[arg(long, env = "PATIENCE_JOBS_DIR", value_name = "DIR")]
    pub jobs_dir: Option<PathBuf>,
    /// Jobs running at once; more wait in the order they came. They share the solver threads
    /// with the calls served.
    #[arg(long, env = "PATIENCE_MAX_JOBS", value_parser = at_least_one, default_value = "1")]
    pub max_jobs: NonZeroUsize,
    /// Jobs that may wait for a place; a new one beyond is refused with RESOURCE_EXHAUSTED
    /// (MAX_QUEUED_JOBS, HTTP 429) and a RetryInfo.
    #[arg(long, env = "PATIENCE_MAX_QUEUED_JOBS", value_parser = at_least_one, default_value = "1000")]
    pub max_queued_jobs: NonZeroUsize,
    /// How long an ended job is kept (listed, watched, its record in DIR/.patience-jobs) before
    /// it is forgotten; its output stays. DeleteJob forgets one at once.
    #[arg(long, env = "PATIENCE_JOB_RETENTION", default_value = "7d", value_parser = parse_duration)]
    pub job_retention: std::time::Duration,
    /// Object storage's limits, for jobs' s3:// inputs and outputs.
    #[command(flatten)]
    pub storage: StorageFlags,
}

/// Flags of `patience client`.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// A daemon's address: http://HOST:PORT, https://HOST:PORT, or dns:///NAME:PORT for every
    /// address NAME resolves to (dns+https:/// with TLS). Give it several times (or a
    /// comma-separated list) to spread the input over several daemons; a daemon that fails has
    /// its unanswered deals resent to the others, and is retried in the background until it is
    /// back.
    #[arg(long, default_value = "http://127.0.0.1:50051", value_delimiter = ',')]
    pub addr: Vec<String>,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Deals per request message [default: 256 in the first, doubling with each message up to
    /// 1024]. A message costs the daemon and the client a few wake-ups whatever its size, so a
    /// long input goes in large ones; a short one, or deals typed as they come, in small ones
    /// (docs/client.md).
    #[arg(long, value_parser = whole::<u32>(1, 10_000))]
    pub batch: Option<u32>,
    /// Decimals printed per probability (6 matches the UVa judge).
    #[arg(long, default_value_t = crate::render::DEAL_PRECISION, value_parser = whole::<u8>(0, crate::render::MAX_PRECISION.into()))]
    pub precision: u8,
    #[command(flatten)]
    pub job: JobFlags,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// UVa-format deal files; standard input when none is given or for "-".
    pub files: Vec<PathBuf>,
}

/// Flags of `patience solve`.
#[derive(Debug, Args)]
pub struct SolveArgs {
    /// Decimals printed per probability (6 matches the UVa judge).
    #[arg(long, default_value_t = crate::render::DEAL_PRECISION, value_parser = whole::<u8>(0, crate::render::MAX_PRECISION.into()))]
    pub precision: u8,
    /// Solver threads, each with its own table [default: the number of cores].
    #[arg(long, value_parser = at_least_one)]
    pub workers: Option<NonZeroUsize>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[command(flatten)]
    pub job: JobFlags,
    /// UVa-format deal files; standard input when none is given or for "-".
    pub files: Vec<PathBuf>,
}

/// Flags of `patience rps`.
#[derive(Debug, Args)]
pub struct RpsArgs {
    /// Solve on daemons instead of in this process: an address as for `patience client`
    /// (http://, https://, dns:///), several times or comma-separated. The output is the same.
    #[arg(long, value_delimiter = ',')]
    pub addr: Vec<String>,
    /// Cases per request message (with --addr).
    #[arg(long, default_value_t = 16, value_parser = whole::<u32>(1, 10_000))]
    pub batch: u32,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Decimals printed per probability (10 is what the original solution prints).
    #[arg(long, default_value_t = crate::render::RPS_PRECISION, value_parser = whole::<u8>(0, crate::render::MAX_PRECISION.into()))]
    pub precision: u8,
    /// Solver threads, each with its own subset tables (6 MiB) [default: the number of cores].
    #[arg(long, value_parser = at_least_one)]
    pub workers: Option<NonZeroUsize>,
    /// Output format: one probability per line, one JSON object per case and line (index, then
    /// probability or error), or Parquet rows (with --output NAME.parquet).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    #[command(flatten)]
    pub job: JobFlags,
    /// Case files, each starting with its number of cases; standard input when none is given or
    /// for "-".
    pub files: Vec<PathBuf>,
}

impl RpsArgs {
    /// How each case's line is rendered, in-process and through daemons alike.
    fn render(&self) -> jobs::sink::output::Render {
        jobs::sink::output::Render {
            format: self.format,
            precision: self.precision,
            // No analysis for this game: JSON lines hold the index and the probability or error.
            asked: crate::solver::Options::default(),
        }
    }
}

/// Flags of `patience gen`.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// How many deals to write.
    #[arg(long, value_parser = whole::<u64>(0, NO_MAX))]
    pub count: u64,
    /// Seed for a reproducible sequence of deals [default: random].
    #[arg(long, value_parser = whole::<u64>(0, NO_MAX))]
    pub seed: Option<u64>,
}

/// Runs the command line and turns the outcome into the process exit status: 0 when every deal
/// was answered, 1 when some deal was bad, 2 for usage and I/O errors.
#[allow(
    clippy::print_stderr,
    reason = "why a whole run failed goes to standard error, once, as its last word"
)]
pub fn main() -> ExitCode {
    let cli = match parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        // Help and version print to standard output and exit 0; usage errors exit 2.
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let result = match cli.command {
        Command::Solve(args) => solve::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Client(args) => client::run(&args),
        Command::Gen(args) => generate::run(&args),
        // The same cases and lines, solved on daemons or in this process.
        Command::Rps(args) if !args.addr.is_empty() => client::run_rps(&args),
        Command::Rps(args) => rps::run(&args),
        Command::Health(args) => health::run(&args),
        Command::Merge(args) => jobs::parts::merge::run(&args.plan()).map_err(anyhow::Error::from),
        Command::Index(args) => jobs::source::index::run(&args.plan()).map_err(anyhow::Error::from),
        Command::Jobs(args) => daemon_jobs::run(&args),
    };
    match result {
        Ok(status) => status.into(),
        Err(err) => {
            // The whole chain, each cause once: a library error that also repeats its source
            // in its own message must not print the source twice.
            eprintln!("patience: {}", crate::client::status::causes(err.as_ref()));
            ExitStatus::Trouble.into()
        }
    }
}

/// The command line parsed, or clap's error; a value refused for a flag that `args` does not
/// give, but its environment variable does, is said to come from that variable (clap names only
/// the flag, which the user never typed).
fn parse(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(&args).map_err(|e| name_the_variable(e, &args))
}

fn name_the_variable(e: clap::Error, args: &[OsString]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return e;
    }
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) else {
        return e;
    };
    // "--workers <WORKERS>" names the flag "--workers".
    let flag = arg.split_whitespace().next().unwrap_or_default();
    let Some(long) = flag.strip_prefix("--") else {
        return e;
    };
    let typed = args.iter().any(|a| {
        a.to_str()
            .is_some_and(|a| a == flag || a.strip_prefix(flag).is_some_and(|r| r.starts_with('=')))
    });
    let command = Cli::command();
    let var = command
        .get_subcommands()
        .flat_map(|s| s.get_arguments())
        .filter(|a| a.get_long() == Some(long))
        .find_map(|a| a.get_env());
    let Some(var) = var else {
        return e;
    };
    // Clap reads the variable only when the flag is not given.
    if typed || std::env::var_os(var).as_deref() != Some(std::ffi::OsStr::new(value)) {
        return e;
    }
    let why = match (
        e.get(ContextKind::ValidValue),
        std::error::Error::source(&e),
    ) {
        (Some(ContextValue::Strings(valid)), _) => format!("want one of {}", valid.join(", ")),
        (_, Some(source)) => source.to_string(),
        _ => "not a value it takes".to_string(),
    };
    let message = format!(
        "{}={value} in the environment is not a value for {flag}: {why}\n",
        var.to_string_lossy()
    );
    // Without the command, so without its usage: the flag was not typed, so what to type is not
    // the point.
    clap::Error::raw(e.kind(), message)
}
