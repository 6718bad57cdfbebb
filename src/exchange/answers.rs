//! A daemon's response to one chunk, checked before anyone prints it: one result per deal sent,
//! each a probability (with the analysis the run asked for) or the daemon's error for that deal.

use super::Unfit;
use crate::proto::{self, result::Outcome};
use crate::render::JsonAnalysis;
use crate::solver::{Analysis, Options};

/// One deal's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    Solved {
        probability: f64,
        /// When the run asked for an analysis: the daemon's, checked and in the engine's terms,
        /// so that it prints exactly as `solve` prints the engine's. Boxed: most runs ask for
        /// none, and every answer is moved from the response to the printer, so an answer is
        /// kept small (an unboxed analysis made the copy 3% of the client's CPU).
        analysis: Option<Box<Analysis>>,
    },
    /// The daemon's `DealError` message for this deal: a bad deal, not a failure.
    Failed(String),
}

impl Answer {
    /// What the answer prints, wherever it is printed: its probability with, in JSON, the
    /// analysis fields `asked` for; or the daemon's message for the deal.
    pub fn printable(&self, asked: Options) -> Result<(f64, Option<JsonAnalysis>), &str> {
        match self {
            Answer::Solved {
                probability,
                analysis,
            } => Ok((
                *probability,
                analysis
                    .as_deref()
                    .map(|analysis| JsonAnalysis::from_engine(analysis, asked)),
            )),
            Answer::Failed(message) => Err(message),
        }
    }
}

/// The answers of one chunk, in deal order.
pub type Answers = Vec<Answer>;

/// A response must answer each item sent, no more and no fewer.
fn one_each(answered: usize, answers: &str, sent: usize, items: &str) -> Result<(), Unfit> {
    if answered == sent {
        return Ok(());
    }
    Err(Unfit::Malformed(format!(
        "it answered {answered} {answers} for {sent} {items}"
    )))
}

/// [`check`] for a response of packed probabilities (`SolveResponse.probabilities`), which a
/// daemon sends only for requests asking no analysis.
pub fn check_packed(
    probabilities: Vec<f64>,
    sent: usize,
    asked: Option<Options>,
) -> Result<Answers, Unfit> {
    if asked.is_some() {
        return Err(Unfit::Malformed(
            "it sent packed probabilities where an analysis was asked for".into(),
        ));
    }
    one_each(probabilities.len(), "probabilities", sent, "deals")?;
    probabilities
        .into_iter()
        .map(|probability| {
            if (0.0..=1.0).contains(&probability) {
                Ok(Answer::Solved {
                    probability,
                    analysis: None,
                })
            } else {
                Err(Unfit::Malformed(format!(
                    "it sent a malformed answer: a probability of {probability}"
                )))
            }
        })
        .collect()
}

/// Turns a daemon's response to one chunk into answers, or says what is wrong with it. `asked` is
/// the analysis the run asks every daemon for (`None`: the plain probability).
pub fn check(
    results: Vec<proto::Result>,
    sent: usize,
    asked: Option<Options>,
) -> Result<Answers, Unfit> {
    one_each(results.len(), "results", sent, "deals")?;
    results
        .into_iter()
        .map(|result| match result.outcome {
            Some(Outcome::Probability(probability)) => {
                let analysis = match (asked, result.analysis) {
                    (None, _) => None,
                    (Some(_), Some(wire)) => Some(Box::new(
                        crate::wire::analysis(probability, &wire).map_err(|e| {
                            Unfit::Malformed(format!("it sent a malformed answer: {e}"))
                        })?,
                    )),
                    // A daemon older than the analysis API ignores the request's options: its
                    // lines would silently lack the fields `solve` prints.
                    (Some(_), None) => {
                        return Err(Unfit::Unsupported(
                            "does not support analysis (--format json needs a newer daemon)".into(),
                        ));
                    }
                };
                Ok(Answer::Solved {
                    probability,
                    analysis,
                })
            }
            Some(Outcome::Error(e)) => Ok(Answer::Failed(e.message)),
            None => Err(Unfit::Malformed(
                "it sent a malformed answer: a result with neither a probability nor an error"
                    .into(),
            )),
        })
        .collect()
}

/// [`check`] for the second game: one probability or error per case sent, nothing else.
pub fn check_rps(results: Vec<proto::RpsResult>, sent: usize) -> Result<Answers, Unfit> {
    use proto::rps_result::Outcome;
    one_each(results.len(), "results", sent, "cases")?;
    results
        .into_iter()
        .map(|result| match result.outcome {
            Some(Outcome::Probability(probability)) => Ok(Answer::Solved {
                probability,
                analysis: None,
            }),
            Some(Outcome::Error(e)) => Ok(Answer::Failed(e.message)),
            None => Err(Unfit::Malformed(
                "it sent a malformed answer: a result with neither a probability nor an error"
                    .into(),
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solved(analysis: Option<proto::Analysis>) -> proto::Result {
        proto::Result {
            index: 0,
            id: String::new(),
            outcome: Some(Outcome::Probability(0.5)),
            analysis,
        }
    }

    #[test]
    fn responses_are_checked_before_the_printer_sees_them() {
        let json = Some(Options::default());
        assert!(matches!(
            check(vec![solved(None)], 2, None),
            Err(Unfit::Malformed(_))
        ));
        let mut empty = solved(None);
        empty.outcome = None;
        assert!(matches!(
            check(vec![empty], 1, None),
            Err(Unfit::Malformed(_))
        ));
        assert!(matches!(
            check(vec![solved(None)], 1, json),
            Err(Unfit::Unsupported(reason)) if reason.contains("does not support analysis")
        ));
        let no_move = proto::Analysis {
            moves: vec![proto::MoveOdds {
                r#move: None,
                probability: 0.5,
            }],
            ..Default::default()
        };
        assert!(matches!(
            check(vec![solved(Some(no_move))], 1, json),
            Err(Unfit::Malformed(reason)) if reason.contains("malformed")
        ));
        assert!(matches!(
            check(vec![solved(None)], 1, None).as_deref(),
            Ok([Answer::Solved { analysis: None, .. }])
        ));
    }
}
