//! The second game's cases and errors, between the engine and the wire.
//!
//! A case on the wire is already split into players, so only the checks of [`Case::new`] apply
//! (plus Maze's triple being present); the reader's framing errors cannot happen here.

use crate::proto;
use crate::rps::{Case, CaseError};

/// Why a case sent over the wire cannot be solved.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WireCaseError {
    /// `maze` was left out: there is no case without her.
    #[error("the case has no probabilities for Maze (field `maze`)")]
    MissingMaze,
    #[error(transparent)]
    Invalid(#[from] CaseError),
}

impl From<&proto::Gestures> for [f64; 3] {
    fn from(g: &proto::Gestures) -> [f64; 3] {
        [g.rock, g.paper, g.scissors]
    }
}

impl From<[f64; 3]> for proto::Gestures {
    fn from([rock, paper, scissors]: [f64; 3]) -> proto::Gestures {
        proto::Gestures {
            rock,
            paper,
            scissors,
        }
    }
}

/// Checks the case as the file reader does: at most the supported number of players (before
/// anything else, so a hostile list is refused without being walked), each triple a probability
/// distribution.
impl TryFrom<&proto::RpsCase> for Case {
    type Error = WireCaseError;

    fn try_from(case: &proto::RpsCase) -> Result<Case, WireCaseError> {
        let maze = case.maze.as_ref().ok_or(WireCaseError::MissingMaze)?;
        if case.others.len() > crate::rps::MAX_OTHERS {
            return Err(CaseError::TooManyOthers {
                n: case.others.len() as u64,
            }
            .into());
        }
        let mut others = [[0.0; 3]; crate::rps::MAX_OTHERS];
        for (row, g) in others.iter_mut().zip(&case.others) {
            *row = g.into();
        }
        Ok(Case::new(maze.into(), &others[..case.others.len()])?)
    }
}

/// What a client sends for a case read from a file.
impl From<&Case> for proto::RpsCase {
    fn from(case: &Case) -> proto::RpsCase {
        proto::RpsCase {
            id: String::new(),
            maze: Some(case.maze().into()),
            others: case.others().iter().map(|&t| t.into()).collect(),
        }
    }
}

impl From<&WireCaseError> for proto::RpsCaseError {
    fn from(e: &WireCaseError) -> proto::RpsCaseError {
        use proto::RpsErrorCode as Code;
        let code = match e {
            WireCaseError::MissingMaze => Code::MissingMaze,
            WireCaseError::Invalid(CaseError::TooManyOthers { .. }) => Code::TooManyPlayers,
            WireCaseError::Invalid(CaseError::Sum { .. }) => Code::Sum,
            WireCaseError::Invalid(CaseError::NotAProbability { .. }) => Code::NotAProbability,
            // Framing and parsing errors come from reading text, which the wire never does.
            WireCaseError::Invalid(_) => Code::Unspecified,
        };
        proto::RpsCaseError {
            code: code as i32,
            message: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::RpsErrorCode as Code;

    fn g(rock: f64, paper: f64, scissors: f64) -> proto::Gestures {
        proto::Gestures {
            rock,
            paper,
            scissors,
        }
    }

    fn code(case: &proto::RpsCase) -> (Code, String) {
        let e = Case::try_from(case).unwrap_err();
        let wire = proto::RpsCaseError::from(&e);
        (Code::try_from(wire.code).unwrap(), wire.message)
    }

    #[test]
    fn a_case_survives_the_round_trip() {
        let case = Case::new([0.2, 0.3, 0.5], &[[1.0, 0.0, 0.0], [0.1, 0.1, 0.8]]).unwrap();
        let back = Case::try_from(&proto::RpsCase::from(&case)).unwrap();
        assert_eq!(back, case);
    }

    #[test]
    fn a_case_without_maze_is_missing_maze() {
        let case = proto::RpsCase::default();
        assert_eq!(code(&case).0, Code::MissingMaze);
    }

    #[test]
    fn sixteen_others_are_too_many_players() {
        let case = proto::RpsCase {
            maze: Some(g(1.0, 0.0, 0.0)),
            others: vec![g(1.0, 0.0, 0.0); 16],
            ..Default::default()
        };
        let (code, message) = code(&case);
        assert_eq!(code, Code::TooManyPlayers);
        assert!(message.contains("16"), "{message}");
    }

    #[test]
    fn nan_is_not_a_probability_and_names_the_player() {
        let case = proto::RpsCase {
            maze: Some(g(1.0, 0.0, 0.0)),
            others: vec![g(0.5, 0.5, 0.0), g(f64::NAN, 0.5, 0.5)],
            ..Default::default()
        };
        let (code, message) = code(&case);
        assert_eq!(code, Code::NotAProbability);
        assert!(message.contains("player 2"), "{message}");
    }

    #[test]
    fn a_sum_off_is_sum() {
        let case = proto::RpsCase {
            maze: Some(g(0.5, 0.5, 0.5)),
            ..Default::default()
        };
        assert_eq!(code(&case).0, Code::Sum);
    }
}
