//! Any bytes, read as a deal string and as a deal file: every deal read is valid and solves to a
//! probability in [0, 1]; everything else is a typed error. Nothing panics.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use patience::deal::{Deal, DealReader};
use patience::solver::{Options, Solver, fraction_value};

thread_local! {
    // One solver for the whole run, as a worker has: it also exercises table reuse.
    static SOLVER: RefCell<Solver> = RefCell::new(Solver::new());
}

fn check(deal: &Deal) {
    let p = SOLVER.with(|s| s.borrow_mut().solve(deal).probability);
    assert!((0.0..=1.0).contains(&p), "probability {p} for\n{deal}");
    assert_eq!(Deal::parse(&deal.to_string()).as_ref(), Ok(deal));
    // Positions reach corners full deals never do: the analysis must agree with the plain answer.
    let all = Options {
        exact: true,
        moves: true,
        line: true,
    };
    let a = SOLVER.with(|s| s.borrow_mut().analyze(deal, all));
    assert_eq!(a.probability.to_bits(), p.to_bits(), "{deal}");
    assert_eq!(a.winnable, p > 0.0, "{deal}");
    let exact = a.exact.as_ref().map_or(f64::NAN, fraction_value);
    assert!((exact - p).abs() <= 1e-12, "exact {exact} vs {p} for {deal}");
    let cards: usize = deal.piles().map(<[_]>::len).sum();
    assert_eq!(a.line.len(), if a.winnable { cards / 2 } else { 0 }, "{deal}");
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        match Deal::parse(text) {
            Ok(deal) => check(&deal),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    for item in DealReader::new(data) {
        match item {
            Ok(deal) => check(&deal),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
});
