//! The rock-paper-scissors engine: answers against the reference, hand-worked cases and an
//! independent brute force of the rules; the case reader's errors, framing and resynchronisation.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};

use crate::common;

use common::rps_answers as read_answers;
use patience::rps::{
    BadCase, Case, CaseError, CaseFileError, CaseReader, Expected, Gesture, MAX_OTHERS, RpsSolver,
    Who,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;

fn solve(maze: [f64; 3], others: &[[f64; 3]]) -> f64 {
    RpsSolver::new().solve(&Case::new(maze, others).expect("a valid case"))
}

/// Every item the reader yields, errors as their messages.
fn read(text: &str) -> Vec<Result<Case, String>> {
    CaseReader::new(text.as_bytes())
        .map(|r| r.map_err(|e| e.to_string()))
        .collect()
}

fn bad_case(item: &Result<Case, CaseFileError>) -> &BadCase {
    match item {
        Err(CaseFileError::Case(bad)) => bad,
        other => panic!("expected a bad case, got {other:?}"),
    }
}

mod corpus {
    use super::*;

    /// The corpus answers, from `reference-rps` (the seed), to 10 and to 15 decimals.
    fn check(name: &str) {
        let cases = common::rps_cases(&format!("{name}.in"));
        let ten = read_answers(&format!("{name}.out10"));
        let fifteen = read_answers(&format!("{name}.out15"));
        assert_eq!(cases.len(), ten.len());
        assert_eq!(cases.len(), fifteen.len());
        let mut solver = RpsSolver::new();
        for (i, case) in cases.iter().enumerate() {
            let got = solver.solve(case);
            // 10 decimals are rounded to within 5e-11 of the seed's value.
            assert!(
                (got - ten[i]).abs() <= 1e-9,
                "{name} case {}: {got} vs {}",
                i + 1,
                ten[i]
            );
            assert!(
                (got - fifteen[i]).abs() <= 1e-12,
                "{name} case {}: {got} vs {}",
                i + 1,
                fifteen[i]
            );
        }
    }

    #[test]
    fn the_sample_matches_the_reference() {
        check("rps-sample");
    }

    #[test]
    fn random_cases_up_to_fifteen_players_match_the_reference() {
        let cases = common::rps_cases("rps-random120.in");
        assert!(cases.iter().any(|c| c.others().len() == MAX_OTHERS));
        assert!(cases.iter().any(|c| c.others().is_empty()));
        check("rps-random120");
    }
}

mod hand_worked {
    use super::*;

    const ROCK: [f64; 3] = [1.0, 0.0, 0.0];
    const PAPER: [f64; 3] = [0.0, 1.0, 0.0];
    const SCISSORS: [f64; 3] = [0.0, 0.0, 1.0];

    #[test]
    fn maze_always_rock_alone_wins_surely() {
        // n = 0. Fat brother shows scissors: she shows rock, which beats it, so the first round
        // ends with him out and her alone: 1. (The seed prints nan here: his rock can only draw.)
        assert_eq!(solve(ROCK, &[]), 1.0);
    }

    #[test]
    fn maze_uniform_alone_wins_half_the_time() {
        // n = 0, Maze uniform. Whatever Fat brother shows (g), she draws with g (1/3), wins with
        // g + 1 (1/3) and loses with g - 1 (1/3); the draws replay, so (1/3) / (2/3) = 1/2.
        let third = 1.0 / 3.0;
        assert!((solve([third; 3], &[]) - 0.5).abs() <= 1e-15);
    }

    #[test]
    fn alone_fat_brother_picks_the_gesture_her_likeliest_beats() {
        // n = 0, Maze (0.5, 0.3, 0.2). His g gives a(g+1) / (a(g+1) + a(g-1)): rock 0.3 / 0.5,
        // paper 0.2 / 0.7, scissors 0.5 / 0.8 = 0.625, the best.
        assert!((solve([0.5, 0.3, 0.2], &[]) - 0.625).abs() <= 1e-15);
    }

    #[test]
    fn a_game_that_can_only_draw_is_never_won() {
        // Maze always rock, player 1 always paper, player 2 always scissors: all three gestures
        // show in every round whatever Fat brother does, so nothing ever ends: 0, not nan.
        assert_eq!(solve(ROCK, &[PAPER, SCISSORS]), 0.0);
        // Maze and player 1 always rock. His rock draws forever; his paper puts them both out; his
        // scissors puts himself out and leaves the two of them drawing forever. 0 again.
        assert_eq!(solve(ROCK, &[ROCK]), 0.0);
    }

    #[test]
    fn nobody_shows_scissors() {
        // Maze (1/2, 1/2, 0), player 1 (x, 1 - x, 0): only Fat brother can show scissors.
        // Without him, Maze and player 1 draw on equal gestures; she wins on her paper and his rock
        // (x/2) and loses on her rock and his paper ((1-x)/2), so f = x. With him, alone with her,
        // his rock wins for her surely (she draws or beats it): 1.
        // Him with both, by his gesture:
        // - rock: draw x/2 (all rock); she wins on paper against rock (x/2); he leaves and the two
        //   remain on paper against paper ((1-x)/2, then f = x); she loses on rock against paper.
        //   (x/2 + x(1-x)/2) / (1 - x/2) = x.
        // - paper: her rock always leaves; her paper and his rock leave player 1 out (x/2, then 1);
        //   all paper draws. (x/2) / (1/2 + x/2) = x / (1 + x).
        // - scissors: her rock with his rock puts Fat brother out (x/2, then f = x); her rock with
        //   his paper shows all three, a draw; her paper loses unless he shows rock (a draw).
        //   (x/2 * x) / (1/2) = x^2.
        // The best is rock, for x.
        for x in [0.0, 0.25, 0.6, 1.0] {
            let got = solve([0.5, 0.5, 0.0], &[[x, 1.0 - x, 0.0]]);
            assert!((got - x).abs() <= 1e-15, "x = {x}: {got}");
        }
    }
}

mod rounding {
    use super::*;

    #[test]
    fn maze_alone_with_three_decimal_thirds_wins_half_the_time() {
        // 0.333 0.333 0.333 sums to 0.999. Each of his gestures gives 0.333 / (0.333 + 0.333):
        // the missing thousandth is no outcome at all, not a draw (the seed's 0.333 / (1 - 0.333)
        // would count it as one and answer 0.49925).
        assert!((solve([0.333; 3], &[]) - 0.5).abs() <= 1e-15);
    }

    #[test]
    fn a_triple_off_by_a_rounding_is_answered_as_if_rescaled() {
        // Scaling one player's triple scales both sums of every ratio alike, so the corpus
        // answers survive triples scaled to sum to 0.996 or 0.9985 (scaling up could push a 1
        // past 1).
        let cases = common::rps_cases("rps-random120.in");
        let mut solver = RpsSolver::new();
        for (i, case) in cases.iter().enumerate().step_by(7) {
            let scale = |t: [f64; 3], k: usize| t.map(|p| p * [0.996, 0.9985][(i + k) % 2]);
            let others: Vec<[f64; 3]> = case
                .others()
                .iter()
                .enumerate()
                .map(|(k, &t)| scale(t, k + 1))
                .collect();
            let scaled = Case::new(scale(case.maze(), 0), &others).expect("within the tolerance");
            let (want, got) = (solver.solve(case), solver.solve(&scaled));
            assert!(
                (got - want).abs() <= 1e-13,
                "case {}: {got} vs {want}",
                i + 1
            );
        }
    }
}

/// An independent model of the rules: the state is who is in, and a round is every joint gesture
/// of those players enumerated one by one.
mod brute {
    use super::*;

    struct Game<'a> {
        maze: [f64; 3],
        others: &'a [[f64; 3]],
        memo: HashMap<(u32, bool), f64>,
    }

    impl Game<'_> {
        /// The probability that Maze wins from here: `alive` are the others still in.
        fn value(&mut self, alive: u32, fat_in: bool) -> f64 {
            if alive == 0 && !fat_in {
                return 1.0;
            }
            if let Some(&v) = self.memo.get(&(alive, fat_in)) {
                return v;
            }
            let members: Vec<usize> = (0..self.others.len())
                .filter(|i| alive >> i & 1 == 1)
                .collect();
            let choices: &[Option<usize>] = if fat_in {
                &[Some(0), Some(1), Some(2)]
            } else {
                &[None]
            };
            let mut best: f64 = 0.0;
            for &fat in choices {
                // `ends` is 1 - P(draw), summed from the rounds that end rather than subtracted,
                // so that a round that can only draw gives exactly 0 (and the value 0).
                let (mut ends, mut won) = (0.0, 0.0);
                for code in 0..3usize.pow(members.len() as u32 + 1) {
                    let mut rest = code;
                    let her = rest % 3;
                    rest /= 3;
                    let mut chance = self.maze[her];
                    let mut shown = [false; 3];
                    shown[her] = true;
                    if let Some(g) = fat {
                        shown[g] = true;
                    }
                    let mut gestures = Vec::new();
                    for &i in &members {
                        let g = rest % 3;
                        rest /= 3;
                        chance *= self.others[i][g];
                        shown[g] = true;
                        gestures.push(g);
                    }
                    if chance == 0.0 || shown.iter().filter(|&&s| s).count() != 2 {
                        continue;
                    }
                    // Two gestures: the beaten one is the one whose successor also shows.
                    let beaten = (0..3)
                        .find(|&g| shown[g] && shown[(g + 1) % 3])
                        .expect("two gestures, one beats the other");
                    ends += chance;
                    if her == beaten {
                        continue;
                    }
                    let next = members
                        .iter()
                        .zip(&gestures)
                        .filter(|&(_, &g)| g != beaten)
                        .fold(0, |set, (&i, _)| set | 1 << i);
                    won += chance * self.value(next, fat_in && fat != Some(beaten));
                }
                // The draws replay the round: v = won + P(draw) v.
                if ends > 0.0 {
                    best = best.max(won / ends);
                }
            }
            self.memo.insert((alive, fat_in), best);
            best
        }
    }

    pub fn value(case: &Case) -> f64 {
        let mut game = Game {
            maze: case.maze(),
            others: case.others(),
            memo: HashMap::new(),
        };
        let everyone = (1u32 << case.others().len()) - 1;
        game.value(everyone, true)
    }

    /// A triple on the corpus's grid of thousandths, often with zeros and certainties.
    fn triple() -> impl Strategy<Value = [f64; 3]> {
        let cut = prop_oneof![Just(0u32), Just(1000), 0..=1000u32];
        (cut.clone(), cut).prop_map(|(a, b)| {
            let (lo, hi) = (a.min(b), a.max(b));
            [lo, hi - lo, 1000 - hi].map(|t| f64::from(t) / 1000.0)
        })
    }

    fn case(max_others: usize) -> impl Strategy<Value = Case> {
        (triple(), prop::collection::vec(triple(), 0..=max_others))
            .prop_map(|(maze, others)| Case::new(maze, &others).expect("grid triples sum to 1"))
    }

    #[test]
    fn the_brute_force_agrees_with_the_hand_worked_cases() {
        let case = Case::new([0.5, 0.5, 0.0], &[[0.25, 0.75, 0.0]]).unwrap();
        assert!((value(&case) - 0.25).abs() <= 1e-15);
        let never = Case::new([1.0, 0.0, 0.0], &[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]).unwrap();
        assert_eq!(value(&never), 0.0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn the_solver_agrees_with_the_brute_force(case in case(4)) {
            let got = RpsSolver::new().solve(&case);
            let want = value(&case);
            prop_assert!((got - want).abs() <= 1e-12, "{got} vs {want} for\n{case}");
        }
    }

    #[test]
    fn one_solver_agrees_with_the_brute_force_case_after_case() {
        // The same tables serve cases of every size, in any order.
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut solver = RpsSolver::new();
        for _ in 0..300 {
            let case = case(4).new_tree(&mut runner).unwrap().current();
            let (got, want) = (solver.solve(&case), value(&case));
            assert!((got - want).abs() <= 1e-12, "{got} vs {want} for\n{case}");
        }
    }
}

mod reader {
    use super::*;

    const CASE1: &str = "1\n0.5 0.25 0.25\n0.2 0.3 0.5\n";
    const CASE2: &str = "2\n0.4 0.4 0.2\n1 0 0\n0.1 0.1 0.8\n";

    #[test]
    fn reads_every_announced_case() {
        let got = read(&format!("3\n{CASE1}{CASE2}0\n0.2 0.2 0.6\n"));
        assert_eq!(got.len(), 3, "{got:?}");
        let cases: Vec<Case> = got.into_iter().map(Result::unwrap).collect();
        assert_eq!(cases[0].maze(), [0.5, 0.25, 0.25]);
        assert_eq!(cases[0].others(), &[[0.2, 0.3, 0.5]]);
        assert_eq!(cases[1].others().len(), 2);
        assert!(cases[2].others().is_empty());
    }

    #[test]
    fn tolerates_blank_lines_crlf_tabs_and_a_byte_order_mark() {
        let plain = format!("2\n{CASE1}{CASE2}");
        let messy = format!(
            "\u{feff}\n \n2\r\n\r\n{}\n\t\n",
            format!("{CASE1}{CASE2}")
                .replace('\n', "\r\n\r\n")
                .replace(' ', " \t ")
        );
        assert_eq!(read(&messy), read(&plain));
        assert!(read(&plain).iter().all(Result::is_ok));
    }

    #[test]
    fn a_sum_off_names_case_line_and_player() {
        let text = format!("2\n{CASE1}2\n0.4 0.4 0.2\n1 0 0\n0.3 0.3 0.3\n");
        let got: Vec<_> = CaseReader::new(text.as_bytes()).collect();
        assert_eq!(got.len(), 2);
        let bad = bad_case(&got[1]);
        assert_eq!((bad.case, bad.line), (2, 8));
        assert!(matches!(
            bad.error,
            CaseError::Sum {
                who: Who::Player(2),
                ..
            }
        ));
        assert_eq!(
            bad.to_string(),
            "case 2 (line 8): player 2's probabilities sum to 0.9; they must sum to 1 (within 0.005)"
        );
    }

    #[test]
    fn a_negative_names_the_gesture_and_the_token() {
        let got = read("1\n0\n-0.1 0.6 0.5\n");
        assert_eq!(
            got,
            [Err(
                "case 1 (line 3): Maze's rock: \"-0.1\" is not a probability (want a number from 0 to 1)"
                    .to_string()
            )]
        );
    }

    #[test]
    fn a_token_that_is_not_a_number_costs_only_its_case() {
        let broken = CASE2.replace("0.1 0.1", "0.1 O.1");
        let got = read(&format!("3\n{CASE1}{broken}{CASE1}"));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].is_ok() && got[2].is_ok(), "{got:?}");
        assert_eq!(
            got[1],
            Err("case 2 (line 8): player 2's paper: \"O.1\" is not a number".to_string())
        );
    }

    #[test]
    fn a_line_of_two_or_four_numbers_is_still_that_players_line() {
        for (line, found) in [("0.5 0.5", 2), ("0.25 0.25 0.25 0.25", 4)] {
            let broken = CASE2.replace("1 0 0", line);
            let got = read(&format!("3\n{CASE1}{broken}{CASE1}"));
            assert_eq!(got.len(), 3, "{got:?}");
            assert!(got[0].is_ok() && got[2].is_ok(), "{got:?}");
            assert_eq!(
                got[1],
                Err(format!(
                    "case 2 (line 7): player 1's line has {found} tokens, \"{line}\"; it needs 3 \
                     probabilities (rock, paper, scissors)"
                ))
            );
        }
    }

    #[test]
    fn too_many_players_is_an_error_but_still_frames_the_case() {
        let big = format!("16\n{}", "0.5 0.5 0\n".repeat(17));
        let text = format!("3\n{CASE1}{big}{CASE1}");
        let got: Vec<_> = CaseReader::new(text.as_bytes()).collect();
        assert_eq!(got.len(), 3);
        assert!(got[0].is_ok() && got[2].is_ok());
        let bad = bad_case(&got[1]);
        assert_eq!((bad.case, bad.line), (2, 5));
        assert_eq!(bad.error, CaseError::TooManyOthers { n: 16 });
        assert_eq!(
            bad.to_string(),
            "case 2 (line 5): 16 other players; at most 15 are supported"
        );
    }

    #[test]
    fn an_unreadable_n_skips_to_the_next_line_holding_one_number() {
        for start in ["x", "-1", "2.5", "99999999999999999999999"] {
            let broken = CASE2.replacen('2', start, 1);
            let got = read(&format!("3\n{CASE1}{broken}{CASE1}"));
            assert_eq!(got.len(), 3, "{got:?}");
            assert!(got[0].is_ok() && got[2].is_ok(), "{got:?}");
            let token = format!("{start:?}");
            assert_eq!(
                got[1],
                Err(format!(
                    "case 2 (line 5): {token} is not a number of other players (want a whole \
                     number alone on its line); skipped 3 lines to the next line holding a single \
                     number"
                ))
            );
        }
    }

    #[test]
    fn a_missing_n_line_costs_only_its_case() {
        // The case starts with Maze's line: three tokens are no count, so its lines are skipped.
        let without_n = CASE2.split_once('\n').unwrap().1;
        let got = read(&format!("3\n{CASE1}{without_n}{CASE1}"));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].is_ok() && got[2].is_ok(), "{got:?}");
        let err = got[1].as_ref().unwrap_err();
        assert!(
            err.starts_with("case 2 (line 5): \"0.4 0.4 0.2\" is not a number of other players"),
            "{err}"
        );
        assert!(err.ends_with("skipped 2 lines to the next line holding a single number"));
    }

    #[test]
    fn a_short_case_ends_at_the_next_start_line() {
        // n says 3 but two player lines follow: the line holding 1 starts case 3 on time.
        let short = CASE2.replacen('2', "3", 1);
        let got = read(&format!("3\n{CASE1}{short}{CASE1}"));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].is_ok() && got[2].is_ok(), "{got:?}");
        assert_eq!(
            got[1],
            Err(
                "case 2 (line 9): player 3's line is missing: this line holds a single number, \
                 so the next case starts here"
                    .to_string()
            )
        );
    }

    #[test]
    fn a_case_with_a_line_too_many_costs_only_its_case() {
        // n says 1 but two player lines follow: the second is where case 3 was due, so case 2 is
        // bad and case 3 is read from its own start line.
        let long = CASE2.replacen('2', "1", 1);
        let got = read(&format!("3\n{CASE1}{long}{CASE1}"));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].is_ok() && got[2].is_ok(), "{got:?}");
        assert_eq!(
            got[1],
            Err(
                "case 2 (line 8): a line more than its 1 other players and Maze, where the next \
                 case's number of other players was due (a line too many, or n too small); the \
                 next case starts at the next line holding a single number"
                    .to_string()
            )
        );
        // The last case's extra line is the file's trailing input.
        let got = read(&format!("2\n{CASE1}{long}"));
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(
            got[2],
            Err("line 8: more input after the 2 announced cases".to_string())
        );
    }

    #[test]
    fn a_lost_start_line_costs_only_its_case_and_the_case_before_stands() {
        // Case 2's start line is gone: its lines follow case 1's, which is answered; case 2 is
        // bad, and case 3 is read from its own start line.
        let without_start = CASE2.split_once('\n').unwrap().1;
        let got = read(&format!("3\n{CASE1}{without_start}{CASE1}"));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].is_ok() && got[2].is_ok(), "{got:?}");
        assert!(
            got[1]
                .as_ref()
                .unwrap_err()
                .starts_with("case 2 (line 5): \"0.4 0.4 0.2\" is not a number of other players"),
            "{got:?}"
        );
    }

    #[test]
    fn an_input_that_ends_early_says_what_it_was_waiting_for() {
        let got: Vec<_> = CaseReader::new(format!("3\n{CASE1}{CASE2}").as_bytes()).collect();
        assert_eq!(got.len(), 3);
        assert!(matches!(
            got[2],
            Err(CaseFileError::Truncated {
                case: 3,
                line: 8,
                expected: Expected::Start,
                cases: 3
            })
        ));
        let got = read(&format!("2\n{CASE1}2\n0.4 0.4 0.2\n1 0 0\n"));
        assert_eq!(
            got[1],
            Err(
                "case 2: the input ends after line 7, before player 2's line; 2 cases were \
                 announced"
                    .to_string()
            )
        );
        assert_eq!(got.len(), 2);
        assert_eq!(
            read("1\n0\n"),
            [Err(
                "case 1: the input ends after line 2, before Maze's line; 1 case was announced"
                    .to_string()
            )]
        );
    }

    #[test]
    fn the_count_must_come_first() {
        assert_eq!(
            read(""),
            [Err(
                "the input is empty; it must start with the number of cases".to_string()
            )]
        );
        assert_eq!(read(" \n\r\n"), read(""));
        for (first, token) in [
            ("abc", "\"abc\""),
            ("-2", "\"-2\""),
            ("0.5 0.5 0", "\"0.5 0.5 0\""),
        ] {
            let got = read(&format!("\n{first}\n{CASE1}"));
            assert_eq!(
                got,
                [Err(format!(
                    "line 2: {token} is not a number of cases (the input must start with a \
                     whole number alone on its line)"
                ))],
                "{first}"
            );
        }
    }

    #[test]
    fn content_after_the_announced_cases_is_reported_once() {
        let got = read(&format!("1\n{CASE1}\n{CASE2}"));
        assert_eq!(got.len(), 2);
        assert!(got[0].is_ok());
        assert_eq!(
            got[1],
            Err("line 6: more input after the 1 announced case".to_string())
        );
        assert_eq!(read("0\n"), []);
        assert_eq!(read("0\n\n \n"), []);
        assert_eq!(
            read("0\n5\n"),
            [Err(
                "line 2: more input after the 0 announced cases".to_string()
            )]
        );
    }

    #[test]
    fn errors_that_end_the_input_end_the_iteration() {
        let mut reader = CaseReader::new("x\n0\n1 0 0\n".as_bytes());
        let first = reader.next().unwrap().unwrap_err();
        assert!(first.ends_input());
        assert!(reader.next().is_none());
        let mut reader = CaseReader::new("2\n0\n1 0 0\n0\n1 0 0 0\n0\n1 0 0\n".as_bytes());
        assert!(reader.next().unwrap().is_ok());
        assert!(!reader.next().unwrap().unwrap_err().ends_input());
        assert!(reader.next().unwrap().unwrap_err().ends_input());
        assert!(reader.next().is_none());
        assert_eq!(reader.announced(), Some(2));
    }

    #[test]
    fn a_token_beyond_ascii_is_a_bad_token() {
        let text = format!("1\n{CASE1}").replacen("0.5", "é.5", 1);
        let got: Vec<_> = CaseReader::new(text.as_bytes()).collect();
        assert!(matches!(
            bad_case(&got[0]).error,
            CaseError::NotANumber {
                who: Who::Maze,
                gesture: Gesture::Rock,
                ..
            }
        ));
    }

    /// Rough edge 8: bytes that are not UTF-8 are not a case file's; the input ends there, once.
    #[test]
    fn invalid_utf8_ends_the_input_with_one_error() {
        let mut bytes = format!("1\n{CASE1}").into_bytes();
        bytes[4] = 0xff;
        let got: Vec<_> = CaseReader::new(&bytes[..]).collect();
        assert_eq!(got.len(), 1);
        assert!(matches!(
            &got[0],
            Err(CaseFileError::Io(e)) if e.kind() == io::ErrorKind::InvalidData
        ));
    }

    /// Fails every read: what the input does after the part a test gives it.
    struct Broken;

    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("the cable is cut"))
        }
    }

    #[test]
    fn a_case_is_handed_on_without_reading_past_it() {
        // Someone typing cases must see each answer before typing the next one: fed by a writer,
        // the line after a case is looked at only when it is there already.
        let text = format!("2\n{CASE1}");
        let input = BufReader::new(text.as_bytes().chain(Broken));
        let there = |input: &BufReader<_>| !input.buffer().is_empty();
        let mut reader = CaseReader::new(input).fed_by_a_writer(there);
        assert!(reader.next().unwrap().is_ok());
        let err = reader.next().unwrap().unwrap_err();
        assert!(matches!(err, CaseFileError::Io(_)));
        assert_eq!(err.to_string(), "read failed: the cable is cut");
        assert!(reader.next().is_none());
        // Read as a file, the input's failure past a case is met looking past it: the case is
        // still handed on whole, and the failure comes next.
        let input = BufReader::new(text.as_bytes().chain(Broken));
        let mut reader = CaseReader::new(input);
        assert!(reader.next().unwrap().is_ok());
        let err = reader.next().unwrap().unwrap_err();
        assert_eq!(err.to_string(), "read failed: the cable is cut");
        assert!(reader.next().is_none());
    }

    fn any_case() -> impl Strategy<Value = Case> {
        let p = 0.0..=1.0f64;
        let triple = (p.clone(), p).prop_map(|(a, b)| {
            let (lo, hi) = (a.min(b), a.max(b));
            [lo, hi - lo, 1.0 - hi]
        });
        (
            triple.clone(),
            prop::collection::vec(triple, 0..=MAX_OTHERS),
        )
            .prop_filter_map("sums within tolerance", |(maze, others)| {
                Case::new(maze, &others).ok()
            })
    }

    fn no_panic<R: BufRead>(input: R) {
        for item in CaseReader::new(input) {
            if let Err(e) = item {
                assert!(!e.to_string().is_empty());
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A case written out reads back exactly, whatever its numbers.
        #[test]
        fn written_cases_read_back_unchanged(cases in prop::collection::vec(any_case(), 0..5)) {
            let text = format!(
                "{}\n{}",
                cases.len(),
                cases.iter().map(Case::to_string).collect::<String>()
            );
            let back: Vec<Case> = CaseReader::new(text.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(back, cases);
        }

        #[test]
        fn any_text_reads_without_panicking(text in any::<String>()) {
            no_panic(text.as_bytes());
        }

        #[test]
        fn any_bytes_read_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
            no_panic(&bytes[..]);
        }

        /// Number-like soup reaches the deeper checks: counts, sums, framing.
        #[test]
        fn number_like_text_reads_without_panicking(
            tokens in prop::collection::vec("-?[0-9]{0,3}(\\.[0-9]{0,3})?|16|1|0|x|1e9", 0..60),
            seps in prop::collection::vec("[ \t]|\r?\n|\n\n", 60),
        ) {
            let text: String = tokens.iter().zip(&seps).map(|(t, s)| format!("{t}{s}")).collect();
            no_panic(text.as_bytes());
        }
    }
}
