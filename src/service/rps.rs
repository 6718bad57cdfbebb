//! FZU 2145 on the service: cases are checked on the async side (the same checks as the file
//! reader's), and a worker's rps engine solves the valid ones.

use super::SolverService;
use super::game::{Game, Split};
use crate::pool::{Engines, PoolError};
use crate::proto::{
    self, RpsErrorCode, SolveRpsRequest, SolveRpsResponse, SolveRpsStreamRequest,
    SolveRpsStreamResponse, rps_result::Outcome,
};
use crate::rps::Case;

/// The `patience.v1.RpsService` service's game.
#[derive(Debug)]
pub(super) struct Rps;

impl Game for Rps {
    type Request = SolveRpsRequest;
    type Response = SolveRpsResponse;
    type StreamRequest = SolveRpsStreamRequest;
    type StreamResponse = SolveRpsStreamResponse;
    /// A valid case, and whether the `panic_on_id` test hook picked it.
    type Work = (Case, bool);
    type Solved = f64;

    const LABEL: &'static str = "rps";
    const STREAM_RPC: &'static str = "SolveRpsStream";
    const UNARY_RPC: &'static str = "SolveRps";
    const ITEMS: &'static str = "cases";
    const FEATURES: Option<&'static str> = None;

    fn items(request: &SolveRpsRequest) -> usize {
        request.cases.len()
    }

    fn results(response: &SolveRpsResponse) -> usize {
        response.results.len()
    }

    fn from_stream(request: SolveRpsStreamRequest) -> SolveRpsRequest {
        SolveRpsRequest {
            cases: request.cases,
        }
    }

    fn to_stream(response: SolveRpsResponse) -> SolveRpsStreamResponse {
        SolveRpsStreamResponse {
            results: response.results,
        }
    }

    fn split(
        service: &SolverService,
        request: SolveRpsRequest,
        first_index: u64,
    ) -> Split<SolveRpsResponse, Self::Work> {
        let mut results = Vec::with_capacity(request.cases.len());
        let mut valid = Vec::new();
        let mut errors = 0;
        for (i, case) in request.cases.into_iter().enumerate() {
            let outcome = match Case::try_from(&case) {
                Ok(parsed) => {
                    let panic = service.limits.panic_on_id.as_ref() == Some(&case.id);
                    valid.push((i, (parsed, panic)));
                    None
                }
                Err(e) => {
                    errors += 1;
                    let wire = proto::RpsCaseError::from(&e);
                    service.metrics.answered(Self::LABEL, code_name(wire.code));
                    Some(Outcome::Error(wire))
                }
            };
            results.push(proto::RpsResult {
                index: first_index + i as u64,
                id: case.id,
                outcome,
            });
        }
        Split {
            response: SolveRpsResponse { results },
            errors,
            valid,
        }
    }

    fn solve(engines: &mut Engines, (case, panic): Self::Work) -> f64 {
        assert!(!panic, "fault injected by the panic_on_id test hook");
        engines.rps.solve(&case)
    }

    fn fill(
        service: &SolverService,
        response: &mut SolveRpsResponse,
        at: usize,
        solved: Result<f64, PoolError>,
    ) -> bool {
        let outcome = match solved {
            Ok(p) => Outcome::Probability(p),
            Err(e) => Outcome::Error(proto::RpsCaseError {
                code: RpsErrorCode::Internal as i32,
                message: format!("internal error: {e}"),
            }),
        };
        let failed = matches!(outcome, Outcome::Error(_));
        service.metrics.answered(
            Self::LABEL,
            match &outcome {
                Outcome::Probability(_) => "solved",
                Outcome::Error(e) => code_name(e.code),
            },
        );
        if let Some(result) = response.results.get_mut(at) {
            result.outcome = Some(outcome);
        }
        failed
    }
}

/// A metrics label for an error code.
fn code_name(code: i32) -> &'static str {
    match RpsErrorCode::try_from(code) {
        Ok(RpsErrorCode::NotAProbability) => "not_a_probability",
        Ok(RpsErrorCode::Sum) => "sum",
        Ok(RpsErrorCode::TooManyPlayers) => "too_many_players",
        Ok(RpsErrorCode::MissingMaze) => "missing_maze",
        Ok(RpsErrorCode::Internal) => "internal",
        _ => "unspecified",
    }
}
