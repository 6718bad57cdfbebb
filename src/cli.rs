//! The `patience` command line: flags are parsed here and handed to one module per subcommand.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod batches;
mod generate;
mod input;
mod output;
mod solve;

pub use output::Status;

/// Exact win probabilities for Double Patience deals (UVa 1637).
#[derive(Debug, Parser)]
#[command(name = "patience", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Solve deal files in this process and print one probability per deal, in input order.
    Solve(SolveArgs),
    /// Write uniformly shuffled deals in the UVa format.
    Gen(GenArgs),
}

/// Flags of `patience solve`.
#[derive(Debug, Args)]
pub struct SolveArgs {
    /// Decimals printed per probability (6 matches the UVa judge).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u8).range(0..=17))]
    pub precision: u8,
    /// Solver threads, each with its own table [default: the number of cores].
    #[arg(long)]
    pub workers: Option<NonZeroUsize>,
    /// UVa-format deal files; standard input when none is given or for "-".
    pub files: Vec<PathBuf>,
}

/// Flags of `patience gen`.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// How many deals to write.
    #[arg(long)]
    pub count: u64,
    /// Seed for a reproducible sequence of deals [default: random].
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Runs the command line and turns the outcome into the process exit status: 0 when every deal
/// was answered, 1 when some deal was bad, 2 for usage and I/O errors.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Solve(args) => solve::run(&args),
        Command::Gen(args) => generate::run(&args),
    };
    match result {
        Ok(status) => status.into(),
        Err(err) => {
            eprintln!("patience: {err:#}");
            Status::Trouble.into()
        }
    }
}

/// The default number of solver workers: one per core.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}
