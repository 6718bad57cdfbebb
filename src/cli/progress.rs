//! A progress bar on standard error for `solve`, `client` and `rps`, for people watching a long
//! file.
//!
//! It is drawn only when standard error is a terminal and standard output is not (results going to
//! the same terminal would be torn by redraws), and never with `--quiet`; otherwise every call here
//! does nothing, so scripts and tests see exactly the output they always saw. Messages meant for
//! standard error go through [`ProgressDisplay::eprintln`], which lifts the bar out of the way first.
//!
//! The number of items (deals or cases) is not known before the input is read, so the total is an
//! estimate: when every input is a regular file, the items printed so far scaled by the file bytes
//! they span, out of all the files' bytes. Standard input and pipes get a spinner with the count and rate instead.

use std::fmt::Display;
use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressState, ProgressStyle};

use super::input::Input;

/// What the bar counts, and the guess at the total before anything is printed.
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

/// The bar, or nothing when it is off.
#[derive(Clone)]
pub struct ProgressDisplay {
    bar: Option<ProgressBar>,
    /// Total bytes of the inputs, when every one is a regular file.
    bytes: Option<u64>,
}

impl ProgressDisplay {
    /// A bar counting deals; see [`ProgressDisplay::counting`].
    pub fn new(quiet: bool, inputs: &[Input]) -> ProgressDisplay {
        ProgressDisplay::counting(Unit::DEALS, quiet, inputs)
    }

    /// A bar for reading `inputs`, counting `unit`s, shown only if the terminals allow it and
    /// `quiet` is off.
    pub fn counting(unit: Unit, quiet: bool, inputs: &[Input]) -> ProgressDisplay {
        let noun = unit.noun;
        let shown = !quiet && std::io::stderr().is_terminal() && !std::io::stdout().is_terminal();
        if !shown {
            return ProgressDisplay::off();
        }
        let bytes = inputs
            .iter()
            .map(Input::size)
            .sum::<Option<u64>>()
            .filter(|&b| b > 0);
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
        // The templates are fixed but for a word, so this cannot fail; a bar without a style
        // still counts.
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
        ProgressDisplay {
            bar: Some(bar),
            bytes,
        }
    }

    /// No bar: every method does nothing.
    pub fn off() -> ProgressDisplay {
        ProgressDisplay {
            bar: None,
            bytes: None,
        }
    }

    /// Counts `items` more printed; `consumed` is how many input bytes the items printed so far
    /// span, which re-estimates the total.
    pub fn advance(&self, items: u64, consumed: u64) {
        let Some(bar) = &self.bar else { return };
        bar.inc(items);
        if let Some(bytes) = self.bytes
            && consumed > 0
        {
            let done = bar.position();
            let estimate = (done as f64 * bytes as f64 / consumed as f64).round() as u64;
            bar.set_length(estimate.max(done));
        }
    }

    /// Prints a message on standard error without tearing the bar.
    #[allow(
        clippy::print_stderr,
        reason = "the bar owns standard error; this is how a message gets past it"
    )]
    pub fn eprintln(&self, message: impl Display) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{message}")),
            None => eprintln!("{message}"),
        }
    }

    /// Removes the bar, leaving the terminal as it was.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
