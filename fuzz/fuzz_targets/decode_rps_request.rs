//! Any bytes as the body of a `SolveRpsRequest`, taken the way the server takes it: decoded with
//! prost, each case checked by the wire conversion, valid ones solved, invalid ones turned into
//! their wire error. Nothing panics, every probability is one, every error has a code and a short
//! message.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use patience::proto::{self, SolveRpsRequest};
use patience::rps::{Case, RpsSolver};
use prost::Message as _;

thread_local! {
    static SOLVER: RefCell<RpsSolver> = RefCell::new(RpsSolver::new());
}

fuzz_target!(|data: &[u8]| {
    let Ok(request) = SolveRpsRequest::decode(data) else {
        return;
    };
    for case in &request.cases {
        match Case::try_from(case) {
            Ok(parsed) => {
                let p = SOLVER.with(|s| s.borrow_mut().solve(&parsed));
                assert!((0.0..=1.0).contains(&p), "{p}");
            }
            Err(e) => {
                let wire = proto::RpsCaseError::from(&e);
                assert!(wire.code != 0 && !wire.message.is_empty());
                assert!(wire.message.len() < 300, "{} bytes", wire.message.len());
            }
        }
    }
});
