//! Any bytes as the body of a `SolveRequest` message, taken the way the server takes it: decoded
//! with prost (as tonic's codec does), each deal validated (text and packed), valid ones solved,
//! invalid ones turned into their wire error. Nothing panics, every deal gets exactly one outcome.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use patience::deal::Deal;
use patience::proto::{self, SolveRequest};
use patience::solver::Solver;
use prost::Message as _;

thread_local! {
    static SOLVER: RefCell<Solver> = RefCell::new(Solver::new());
}

fuzz_target!(|data: &[u8]| {
    let Ok(request) = SolveRequest::decode(data) else {
        return;
    };
    let text = request.deals.iter().map(|deal| Deal::parse(&deal.cards));
    let packed = request.packed_deals.chunks(Deal::PACKED).map(Deal::from_packed);
    for parsed in text.chain(packed) {
        match parsed {
            Ok(parsed) => {
                let p = SOLVER.with(|s| s.borrow_mut().solve(&parsed).probability);
                assert!((0.0..=1.0).contains(&p));
            }
            Err(e) => {
                let wire = proto::DealError::from(&e);
                assert!(wire.code != 0 && !wire.message.is_empty());
                assert!(wire.message.len() < 300, "{} bytes", wire.message.len());
            }
        }
    }
    // The request survives a round trip, as a client resending it would rely on.
    assert_eq!(SolveRequest::decode(&request.encode_to_vec()[..]).ok(), Some(request));
});
