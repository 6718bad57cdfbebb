//! The two games' requests and responses: how a chunk of deals or cases becomes a request
//! message, and how a response is checked into [`Answers`].

use std::io::BufRead;

use super::answers::{self, Answers};
use super::{Exchange, Unfit};
use crate::deal::{Deal, DealReader};
use crate::proto::{
    self, SolveRequest, SolveResponse, SolveRpsStreamRequest, SolveRpsStreamResponse,
};
use crate::rps::{Case, CaseReader};
use crate::solver::Options;

/// Double Patience deals, on `patience.v1.Solver/SolveStream`. Full deals go packed
/// (`packed_deals`, 36 bytes each) to daemons that read them, a chunk holding a position as text.
#[derive(Debug)]
pub struct DealProtocol;

impl Exchange for DealProtocol {
    type Item = Deal;
    type Reader<R: BufRead> = DealReader<R>;
    type Request = SolveRequest;
    type Response = SolveResponse;
    const RPC: &'static str = "patience.v1.Solver/SolveStream";

    fn request(deals: &[Deal], analysis: Option<proto::AnalysisOptions>) -> SolveRequest {
        // Probabilities come back packed when nothing else is asked (a daemon that does not know
        // the field answers with results, which `check` reads as well).
        let packed_answers = analysis.is_none();
        let mut packed_deals = Vec::with_capacity(deals.len() * Deal::PACKED);
        if deals.iter().all(|deal| deal.pack_into(&mut packed_deals)) {
            return SolveRequest {
                deals: Vec::new(),
                analysis,
                packed_deals,
                packed_answers,
            };
        }
        SolveRequest {
            deals: deals.iter().map(proto::Deal::from).collect(),
            analysis,
            packed_deals: Vec::new(),
            packed_answers,
        }
    }

    fn items(request: &SolveRequest) -> usize {
        request.deals.len() + request.packed_deals.len().div_ceil(Deal::PACKED)
    }

    /// Packed deals unpacked into text ones; this client packs only whole deals it read, so
    /// every one unpacks.
    fn plain(mut request: SolveRequest) -> SolveRequest {
        let packed = std::mem::take(&mut request.packed_deals);
        request.deals.extend(
            packed
                .chunks(Deal::PACKED)
                .filter_map(|bytes| Deal::from_packed(bytes).ok())
                .map(|deal| proto::Deal::from(&deal)),
        );
        request
    }

    fn results(response: &SolveResponse) -> usize {
        response.results.len() + response.probabilities.len()
    }

    fn check(
        response: SolveResponse,
        sent: usize,
        asked: Option<Options>,
    ) -> Result<Answers, Unfit> {
        if response.probabilities.is_empty() {
            answers::check(response.results, sent, asked)
        } else if response.results.is_empty() {
            answers::check_packed(response.probabilities, sent, asked)
        } else {
            Err(Unfit::Malformed(
                "it sent a malformed answer: both results and packed probabilities".into(),
            ))
        }
    }
}

/// FZU 2145 cases, on `patience.v1.RpsService/SolveRpsStream`.
#[derive(Debug)]
pub struct RpsProtocol;

impl Exchange for RpsProtocol {
    type Item = Case;
    type Reader<R: BufRead> = CaseReader<R>;
    type Request = SolveRpsStreamRequest;
    type Response = SolveRpsStreamResponse;
    const RPC: &'static str = "patience.v1.RpsService/SolveRpsStream";

    fn request(cases: &[Case], _: Option<proto::AnalysisOptions>) -> SolveRpsStreamRequest {
        SolveRpsStreamRequest {
            cases: cases.iter().map(proto::RpsCase::from).collect(),
        }
    }

    fn items(request: &SolveRpsStreamRequest) -> usize {
        request.cases.len()
    }

    fn results(response: &SolveRpsStreamResponse) -> usize {
        response.results.len()
    }

    /// The cases' fields are the first version's.
    fn plain(request: SolveRpsStreamRequest) -> SolveRpsStreamRequest {
        request
    }

    fn check(
        response: SolveRpsStreamResponse,
        sent: usize,
        _asked: Option<Options>,
    ) -> Result<Answers, Unfit> {
        answers::check_rps(response.results, sent)
    }
}
