//! What `solve`, `client` and `rps` say about a run on standard error while it goes (`--progress`)
//! and when it ends (the summary of `--progress log` and `-v`).
//!
//! - `auto` (the default): a bar when standard error is a terminal and the answers do not print
//!   on it (`--output FILE`, or standard output redirected); otherwise nothing, so scripts and
//!   tests see exactly the output they always saw.
//! - `bar`: the bar whenever standard error is a terminal.
//! - `log`: a line every `--progress-every` (10 s), for the logs of jobs and CI, where a bar is
//!   never drawn; and the summary at the end.
//! - `off` (`--quiet`): nothing.
//!
//! Messages meant for standard error go through [`Progress::eprintln`], which lifts the bar out
//! of the way first. The number of items (deals or cases) is not known before the input is read,
//! so the total is an estimate: when every input is a regular file, the items so far scaled by the
//! file bytes they span, out of all the files' bytes. The lines' words are in `report.rs`.

use std::fmt::Display;
use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressState, ProgressStyle};

use super::words::{self, Counts};

/// What `solve`, `client` and `rps` say about a run's progress, on standard error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar when standard error is a terminal and the answers do not print on it; else nothing.
    #[default]
    Auto,
    /// A bar whenever standard error is a terminal, even with the answers printing there too.
    Bar,
    /// A line about every 10 s (done, rate, bad, time left when the total is known), and a
    /// summary at the end: for the logs of jobs and CI.
    Log,
    /// Nothing.
    Off,
}

/// What the progress counts, and the guess at the total before anything is printed.
#[derive(Clone, Copy, Debug)]
pub struct Unit {
    /// The plural shown after the count.
    pub noun: &'static str,
    /// Bytes of a typical item in its file format, for the first guess only.
    pub typical_bytes: u64,
}

impl Unit {
    /// A deal as the UVa format writes it: 9 lines of 4 cards and a newline.
    pub const DEALS: Unit = Unit {
        noun: "deals",
        typical_bytes: 108,
    };
    /// A rock-paper-scissors case with seven other players: its `n` and eight lines like
    /// `0.333 0.333 0.334`.
    pub const CASES: Unit = Unit {
        noun: "cases",
        typical_bytes: 146,
    };
}

/// How a run is set up to report, from its flags.
#[derive(Clone, Debug)]
pub struct Setup {
    pub unit: Unit,
    pub mode: ProgressMode,
    /// The summary line at the end (`-v`; `log` prints it anyway).
    pub summary: bool,
    /// The answers print on standard output (no `--output`).
    pub to_stdout: bool,
    /// How often `log` prints.
    pub every: Duration,
    /// Answers already in the output file (a resume) and its name: read again, not answered.
    pub kept: u64,
    pub file: Option<String>,
}

/// The run's progress: a bar, log lines, or nothing; and its counts for the summary. Clones
/// share everything.
#[derive(Clone)]
pub struct Progress {
    shared: Arc<ProgressShared>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").finish_non_exhaustive()
    }
}

struct ProgressShared {
    setup: Setup,
    bar: Option<ProgressBar>,
    /// Total bytes of the inputs, when every one is a regular file.
    bytes: Option<u64>,
    /// Items printed by this run, bad ones among them.
    done: AtomicU64,
    bad: AtomicU64,
    /// Items read again and not answered (a resume), bad ones among them.
    skipped: AtomicU64,
    skipped_bad: AtomicU64,
    /// Input bytes the items so far span.
    consumed: AtomicU64,
    started: Instant,
    /// When this run's answering started: after the inputs already answered were read again.
    answering: Mutex<Instant>,
    /// Stops the log lines' thread (dropped: it stops).
    ticker: Mutex<Option<(mpsc::Sender<()>, std::thread::JoinHandle<()>)>>,
    /// The first input that could not be read (further), in its own words: what a daemon's job
    /// that fails on it says ([`Progress::trouble`]).
    trouble: Mutex<Option<String>>,
}

impl Progress {
    /// The progress of a run over `bytes` of input (`None` when they are not known beforehand:
    /// standard input, a pipe), as `setup` asks.
    pub fn new(setup: Setup, bytes: Option<u64>) -> Progress {
        let bytes = bytes.filter(|&b| b > 0);
        let terminal = std::io::stderr().is_terminal();
        let answers_on_terminal = setup.to_stdout && std::io::stdout().is_terminal();
        let bar = match setup.mode {
            ProgressMode::Auto if terminal && !answers_on_terminal => Some(bar(setup.unit, bytes)),
            ProgressMode::Bar if terminal => Some(bar(setup.unit, bytes)),
            _ => None,
        };
        let now = Instant::now();
        let progress = Progress {
            shared: Arc::new(ProgressShared {
                bar,
                bytes,
                done: AtomicU64::new(0),
                bad: AtomicU64::new(0),
                skipped: AtomicU64::new(0),
                skipped_bad: AtomicU64::new(0),
                consumed: AtomicU64::new(0),
                started: now,
                answering: Mutex::new(now),
                ticker: Mutex::new(None),
                trouble: Mutex::new(None),
                setup,
            }),
        };
        if progress.shared.setup.mode == ProgressMode::Log {
            progress.start_log();
        }
        progress
    }

    fn start_log(&self) {
        let (stop, stopped) = mpsc::channel::<()>();
        let every = self.shared.setup.every.max(Duration::from_millis(10));
        let progress = self.clone();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                // Until told to stop, or the sender is dropped.
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    progress.eprintln(words::progress_line(&progress.counts()));
                }
            });
        // Without the thread, no log lines: the run goes on regardless.
        if let Ok(thread) = thread {
            *lock(&self.shared.ticker) = Some((stop, thread));
        }
    }

    /// `items` more printed, `bad` of them `error:` lines; the items so far span `consumed` input
    /// bytes, which re-estimates the total.
    pub fn advance(&self, items: u64, bad: u64, consumed: u64) {
        let s = &self.shared;
        s.done.fetch_add(items, Ordering::Relaxed);
        s.bad.fetch_add(bad, Ordering::Relaxed);
        s.consumed.store(consumed, Ordering::Relaxed);
        self.redraw(items);
    }

    /// `items` more read again and not answered (they are in the output file already), `bad` of
    /// them bad. The rate is this run's answering: it starts over after them.
    pub fn skipped(&self, items: u64, bad: u64, consumed: u64) {
        let s = &self.shared;
        s.skipped.fetch_add(items, Ordering::Relaxed);
        s.skipped_bad.fetch_add(bad, Ordering::Relaxed);
        s.consumed.store(consumed, Ordering::Relaxed);
        *lock(&s.answering) = Instant::now();
        self.redraw(items);
        if let Some(bar) = &s.bar {
            bar.reset_eta();
        }
    }

    fn redraw(&self, items: u64) {
        let s = &self.shared;
        let Some(bar) = &s.bar else { return };
        bar.inc(items);
        if let Some(total) = self.counts().total {
            bar.set_length(total.max(bar.position()));
        }
    }

    /// The counts so far, for a line.
    pub fn counts(&self) -> Counts {
        let s = &self.shared;
        let done = s.done.load(Ordering::Relaxed);
        let skipped = s.skipped.load(Ordering::Relaxed);
        let consumed = s.consumed.load(Ordering::Relaxed);
        let all = done + skipped;
        let total = s.bytes.map(|bytes| match consumed {
            // Until the first items are read, guess from the usual layout.
            0 => bytes.div_ceil(s.setup.unit.typical_bytes),
            _ => ((all as f64 * bytes as f64 / consumed as f64).round() as u64).max(all),
        });
        Counts {
            noun: s.setup.unit.noun,
            done,
            bad: s.bad.load(Ordering::Relaxed),
            skipped,
            skipped_bad: s.skipped_bad.load(Ordering::Relaxed),
            kept: s.setup.kept,
            file: s.setup.file.clone(),
            total,
            consumed,
            bytes: s.bytes,
            answering: lock(&s.answering).elapsed(),
            wall: s.started.elapsed(),
        }
    }

    /// Says on standard error (as [`Progress::eprintln`]) that an input could not be read
    /// (further), and keeps the first such message for [`Progress::trouble`].
    pub fn unreadable(&self, message: &str) {
        lock(&self.shared.trouble).get_or_insert_with(|| message.to_string());
        self.eprintln(format_args!("patience: {message}"));
    }

    /// The first input that could not be read (further), in its own words, if any.
    pub fn trouble(&self) -> Option<String> {
        lock(&self.shared.trouble).clone()
    }

    /// Prints a message on standard error without tearing the bar.
    #[allow(
        clippy::print_stderr,
        reason = "the bar owns standard error; this is how a message gets past it"
    )]
    pub fn eprintln(&self, message: impl Display) {
        match &self.shared.bar {
            Some(bar) => bar.suspend(|| eprintln!("{message}")),
            None => eprintln!("{message}"),
        }
    }

    /// Removes the bar, leaving the terminal as it was, and stops the log lines.
    pub fn finish(&self) {
        if let Some(bar) = &self.shared.bar {
            bar.finish_and_clear();
        }
        let ticker = lock(&self.shared.ticker).take();
        if let Some((stop, thread)) = ticker {
            drop(stop);
            let _ = thread.join();
        }
    }

    /// Ends the run's reporting: [`Progress::finish`], then the summary line if it was asked
    /// for, with `more` (say, the daemons' shares) at its end.
    pub fn summarize(&self, more: Option<String>) {
        self.finish();
        let setup = &self.shared.setup;
        if setup.summary || setup.mode == ProgressMode::Log {
            self.eprintln(words::summary_line(&self.counts(), more.as_deref()));
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The bar on standard error, with a length when the total can be estimated.
fn bar(unit: Unit, bytes: Option<u64>) -> ProgressBar {
    let noun = unit.noun;
    // Cleared however the run ends, errors included.
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
        .with_finish(ProgressFinish::AndClear);
    let style = match bytes {
        Some(_) => ProgressStyle::with_template(&format!(
            "{{spinner}} [{{bar:30}}] {{human_pos}}/~{{human_len}} {noun}, {{rate}}, ETA {{eta}}"
        )),
        None => ProgressStyle::with_template(&format!(
            "{{spinner}} {{human_pos}} {noun}, {{rate}}, {{elapsed}}"
        )),
    };
    // The templates are fixed but for a word, so this cannot fail; a bar without a style still
    // counts.
    if let Ok(style) = style {
        // Whole items per second: indicatif's own {per_sec} prints four decimals.
        let style = style
            .with_key(
                "rate",
                move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0} {noun}/s", state.per_sec());
                },
            )
            .progress_chars("=> ");
        bar.set_style(style);
    }
    if let Some(bytes) = bytes {
        // Until the first items are printed, guess from the usual layout.
        bar.set_length(bytes.div_ceil(unit.typical_bytes));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
