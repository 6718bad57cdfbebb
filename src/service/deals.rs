//! Double Patience on the service: deals are parsed and validated on the async side (cheap, and
//! it keeps bad deals off the workers); a worker solves the valid ones, with the analysis their
//! request asked for.

use super::SolverService;
use super::game::{Game, Split};
use crate::deal::Deal;
use crate::pool::{Engines, PoolError};
use crate::proto::{self, ErrorCode, SolveRequest, SolveResponse, result::Outcome};
use crate::solver::Options;
use crate::wire;

/// The `patience.v1.Solver` service's game.
#[derive(Debug)]
pub(super) struct Deals;

/// A valid deal for the pool, the analysis its request asked for, and whether the `panic_on_id`
/// test hook picked it.
pub(super) type Work = (Deal, Option<Options>, bool);

impl Game for Deals {
    type Request = SolveRequest;
    type Response = SolveResponse;
    type StreamRequest = SolveRequest;
    type StreamResponse = SolveResponse;
    type Work = Work;
    /// The probability, and the analysis in wire form when one was asked for (converted on the
    /// worker, so the async side only moves it).
    type Solved = (f64, Option<proto::Analysis>);

    const LABEL: &'static str = "double_patience";
    const STREAM_RPC: &'static str = "SolveStream";
    const UNARY_RPC: &'static str = "Solve";
    const ITEMS: &'static str = "deals";
    const FEATURES: Option<&'static str> = Some(wire::PACKED_DEALS);

    /// Text deals, then packed ones; bytes left over after the last whole packed deal are one
    /// more (bad) deal.
    fn items(request: &SolveRequest) -> usize {
        request.deals.len() + request.packed_deals.len().div_ceil(Deal::PACKED)
    }

    fn results(response: &SolveResponse) -> usize {
        response.results.len() + response.probabilities.len()
    }

    fn from_stream(request: SolveRequest) -> SolveRequest {
        request
    }

    fn to_stream(response: SolveResponse) -> SolveResponse {
        response
    }

    fn split(
        service: &SolverService,
        request: SolveRequest,
        first_index: u64,
    ) -> Split<SolveResponse, Work> {
        let options = request.analysis.map(Options::from);
        let items = Self::items(&request);
        // Packed answers while every deal so far is valid and has no id; the first that is not
        // turns the response into results.
        let mut packed = request.packed_answers && options.is_none();
        let mut probabilities = Vec::new();
        let mut results = Vec::new();
        if packed {
            probabilities.reserve(items);
        } else {
            results.reserve(items);
        }
        let mut valid = Vec::with_capacity(items);
        let mut errors = 0;
        let text = request.deals.into_iter().map(|deal| {
            let panic = service.limits.panic_on_id.as_ref() == Some(&deal.id);
            (Deal::parse(&deal.cards), deal.id, panic)
        });
        let packed_deals = request
            .packed_deals
            .chunks(Deal::PACKED)
            .map(|bytes| (Deal::from_packed(bytes), String::new(), false));
        for (i, (parsed, id, panic)) in text.chain(packed_deals).enumerate() {
            if packed {
                match parsed {
                    Ok(deal) if id.is_empty() => {
                        valid.push((i, (deal, options, panic)));
                        probabilities.push(UNSOLVED);
                        continue;
                    }
                    _ => {
                        packed = false;
                        results = unpacked(&mut probabilities, first_index);
                    }
                }
            }
            let outcome = match parsed {
                Ok(parsed) => {
                    valid.push((i, (parsed, options, panic)));
                    None
                }
                Err(e) => {
                    errors += 1;
                    let wire = proto::DealError::from(&e);
                    service.metrics.answered(Self::LABEL, code_name(wire.code));
                    Some(Outcome::Error(wire))
                }
            };
            results.push(proto::Result {
                index: first_index + i as u64,
                id,
                outcome,
                analysis: None,
            });
        }
        Split {
            response: SolveResponse {
                results,
                first_index: if probabilities.is_empty() {
                    0
                } else {
                    first_index
                },
                probabilities,
            },
            errors,
            valid,
        }
    }

    fn solve(engines: &mut Engines, (deal, options, panic): Work) -> Self::Solved {
        assert!(!panic, "fault injected by the panic_on_id test hook");
        match options {
            None => (engines.deals.solve(&deal).probability, None),
            Some(options) => {
                let analysis = engines.deals.analyze(&deal, options);
                (analysis.probability, Some(proto::Analysis::from(&analysis)))
            }
        }
    }

    fn fill(
        service: &SolverService,
        response: &mut SolveResponse,
        at: usize,
        solved: Result<Self::Solved, PoolError>,
    ) -> bool {
        let (outcome, analysis) = match solved {
            Ok((p, analysis)) => (Outcome::Probability(p), analysis),
            Err(e) => (
                Outcome::Error(proto::DealError {
                    code: ErrorCode::Internal as i32,
                    message: format!("internal error: {e}"),
                }),
                None,
            ),
        };
        let failed = matches!(outcome, Outcome::Error(_));
        service.metrics.answered(
            Self::LABEL,
            match &outcome {
                Outcome::Probability(_) => "solved",
                Outcome::Error(e) => code_name(e.code),
            },
        );
        if !response.probabilities.is_empty() {
            match (&outcome, &analysis) {
                (Outcome::Probability(p), None) => {
                    if let Some(slot) = response.probabilities.get_mut(at) {
                        *slot = *p;
                    }
                    return failed;
                }
                // A deal the pool could not solve (a panic): the response becomes results.
                _ => {
                    response.results = unpacked(&mut response.probabilities, response.first_index);
                    response.first_index = 0;
                }
            }
        }
        if let Some(result) = response.results.get_mut(at) {
            result.outcome = Some(outcome);
            result.analysis = analysis;
        }
        failed
    }
}

/// A packed answer's place not yet filled: no probability is NaN.
const UNSOLVED: f64 = f64::NAN;

/// Packed answers as results: the ones filled so far with their probability, the others still
/// to be filled. Empties `probabilities`.
fn unpacked(probabilities: &mut Vec<f64>, first_index: u64) -> Vec<proto::Result> {
    probabilities
        .drain(..)
        .enumerate()
        .map(|(i, p)| proto::Result {
            index: first_index + i as u64,
            id: String::new(),
            outcome: (!p.is_nan()).then_some(Outcome::Probability(p)),
            analysis: None,
        })
        .collect()
}

/// A metrics label for an error code.
fn code_name(code: i32) -> &'static str {
    match ErrorCode::try_from(code) {
        Ok(ErrorCode::BadCard) => "bad_card",
        Ok(ErrorCode::CardCount) => "card_count",
        Ok(ErrorCode::DuplicateCard) => "duplicate_card",
        Ok(ErrorCode::Internal) => "internal",
        _ => "unspecified",
    }
}
