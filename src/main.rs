//! The `patience` binary: everything lives in the library's `cli` module.

fn main() -> std::process::ExitCode {
    patience::cli::main()
}
