//! The reference data of `tests/data` (see its README): deals and the answers the seed C++
//! solutions printed for them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use patience::deal::{Deal, PILES};

/// The reference answers are printed with 9 decimals: allow their rounding on top of 1e-9.
pub const TOLERANCE: f64 = 1e-9 + 5e-10;

/// Where the seed solvers live unless `PATIENCE_REFERENCE_DIR` says otherwise: the `shared/`
/// directory beside this checkout, as this project's CI has it.
const DEFAULT_REFERENCE_DIR: &str = "../shared/reference";

/// The checkout's root, where `tests/data` is: the package's own folder for the root package,
/// two up for the engine's (crates/engine), whose tests and benches read the same data.
fn checkout() -> &'static Path {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    package
        .ancestors()
        .find(|dir| dir.join("tests/data").is_dir())
        .unwrap_or(package)
}

/// A seed solver of `../shared/reference` (`reference-solve`, `reference-rps`), for the tests and
/// benches that compare against it, or `None` when it cannot run here: the script is missing or
/// g++ (which it compiles the seed with) is. Then a note on standard error says what is skipped
/// and how to enable it (`cargo test -- --nocapture` shows it). The directory is
/// `PATIENCE_REFERENCE_DIR` when set; a directory given that way must hold the script, or the
/// caller panics: asking for the comparison and silently not getting it would hide a skip.
pub fn reference(name: &str) -> Option<PathBuf> {
    let given = std::env::var_os("PATIENCE_REFERENCE_DIR");
    let script = reference_path(name);
    let gxx = Command::new("g++")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let missing = match (script.is_file(), gxx) {
        (true, true) => return Some(script),
        (false, _) => format!("{} is not there", script.display()),
        (true, false) => "g++ is not installed".to_string(),
    };
    assert!(
        given.is_none(),
        "PATIENCE_REFERENCE_DIR asks for the comparison with {name}, but {missing}"
    );
    eprintln!(
        "note: skipping the comparison with {name}: {missing}; to run it, install g++ and put \
         the shared/ directory beside the checkout or set PATIENCE_REFERENCE_DIR to its \
         reference/ directory"
    );
    None
}

/// Where the seed solver `name` is expected: in `PATIENCE_REFERENCE_DIR`, or else in
/// `../shared/reference` beside the checkout.
pub fn reference_path(name: &str) -> PathBuf {
    std::env::var_os("PATIENCE_REFERENCE_DIR")
        .map_or_else(|| checkout().join(DEFAULT_REFERENCE_DIR), PathBuf::from)
        .join(name)
}

/// The path of `tests/data/NAME`.
pub fn data(name: &str) -> String {
    checkout()
        .join("tests/data")
        .join(name)
        .display()
        .to_string()
}

/// The contents of `tests/data/NAME`.
pub fn text(name: &str) -> String {
    std::fs::read_to_string(data(name)).expect("reference data")
}

/// The deals of a reference `.in` file (`NAME` with its extension): nine lines per deal, blank
/// lines between them ignored, each read with `Deal::parse` (not the streaming reader, which some
/// tests are about).
pub fn deals(name: &str) -> Vec<Deal> {
    let text = std::fs::read_to_string(data(name)).expect("reference input");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len() % PILES, 0, "{name}: not 9 lines per deal");
    lines
        .chunks(PILES)
        .enumerate()
        .map(|(i, pile_lines)| {
            Deal::parse(&pile_lines.join("\n"))
                .unwrap_or_else(|e| panic!("{name}: deal {}: {e}", i + 1))
        })
        .collect()
}

/// One number per line of a reference answer file (`NAME` with its extension).
pub fn answers(name: &str) -> Vec<f64> {
    std::fs::read_to_string(data(name))
        .expect("reference answers")
        .lines()
        .map(|l| {
            l.trim()
                .parse()
                .unwrap_or_else(|e| panic!("{name}: {l:?}: {e}"))
        })
        .collect()
}

/// The deals of `NAME.in` and their 9-decimal answers from `NAME.out9`, as many of each.
pub fn corpus(name: &str) -> (Vec<Deal>, Vec<f64>) {
    let deals = deals(&format!("{name}.in"));
    let expected = answers(&format!("{name}.out9"));
    assert_eq!(deals.len(), expected.len(), "{name}: deals and answers");
    (deals, expected)
}

/// The cases of an rps reference `.in` file, read with the streaming reader (they are all valid).
pub fn rps_cases(name: &str) -> Vec<patience::rps::Case> {
    patience::rps::CaseReader::new(text(name).as_bytes())
        .map(|r| r.expect("a reference case"))
        .collect()
}

/// The answers `reference-rps` (seed 004) printed for an rps reference file, one per line.
pub fn rps_answers(name: &str) -> Vec<f64> {
    text(name)
        .lines()
        .map(|l| l.trim().parse().expect("a number"))
        .collect()
}

/// `count` random rps cases as a case file (the count first), from `seed`. Each case has `others`
/// other players, or when that is `None` 0 to 15 of them in turn. Every triple is written with
/// three decimals that sum to exactly 1 (thousandths adding up to 1000), as the corpus is: the
/// seed divides by `1 - P(draw)`, so only then do its answers and ours agree to 1e-12. About one
/// player in eight never shows one gesture (a 0), which makes some situations draw more.
pub fn rps_random_cases(count: usize, others: Option<usize>, seed: u64) -> String {
    use std::fmt::Write as _;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut text = format!("{count}\n");
    for case in 0..count {
        let n = others.unwrap_or(case % (patience::rps::MAX_OTHERS + 1));
        let _ = writeln!(text, "{n}");
        for _ in 0..=n {
            let (x, y) = if rng.u8(..8) == 0 {
                // One gesture never shown: which one depends on where the 0 falls.
                let x = rng.u32(0..=1000);
                [(0, x), (x, x), (x, 1000)][rng.usize(..3)]
            } else {
                let (a, b) = (rng.u32(0..=1000), rng.u32(0..=1000));
                (a.min(b), a.max(b))
            };
            let thousandths = |t: u32| format!("{}.{:03}", t / 1000, t % 1000);
            let _ = writeln!(
                text,
                "{} {} {}",
                thousandths(x),
                thousandths(y - x),
                thousandths(1000 - y)
            );
        }
    }
    text
}
