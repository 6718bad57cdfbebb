//! Any bytes, read as a deal string and as a deal file: every deal read is valid and solves to a
//! probability in [0, 1]; everything else is a typed error. Nothing panics.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use patience::deal::{Deal, DealReader};
use patience::solver::Solver;

thread_local! {
    // One solver for the whole run, as a worker has: it also exercises table reuse.
    static SOLVER: RefCell<Solver> = RefCell::new(Solver::new());
}

fn check(deal: &Deal) {
    let p = SOLVER.with(|s| s.borrow_mut().solve(deal).probability);
    assert!((0.0..=1.0).contains(&p), "probability {p} for\n{deal}");
    assert_eq!(Deal::parse(&deal.to_string()).as_ref(), Ok(deal));
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
