//! The analysis options (winnable, move odds, winning line, exact fraction) against facts that do
//! not come from the engine: the reference's 15-decimal answers, positions whose answer is worked
//! out by hand, a move checker that replays the line by the rules, and re-solving the position
//! after each move from scratch.

use crate::common;

use std::collections::HashMap;

use common::{answers, deals};
use patience::deal::{Card, Deal, PILES};
use patience::solver::{Analysis, Move, Options, Solver, fraction_text, fraction_value};

const ALL: Options = Options {
    exact: true,
    moves: true,
    line: true,
};

fn position(text: &str) -> Deal {
    Deal::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The rules of a move, checked by hand: both piles hold a card, the two tops have the move's
/// rank, the piles are named 1..9 lower first. Returns the position after it.
fn apply(piles: &mut [Vec<Card>], play: Move) -> Result<(), String> {
    let [a, b] = play.piles.map(usize::from);
    if !(1 <= a && a < b && b <= PILES) {
        return Err(format!("piles {a} and {b} are not 1 <= a < b <= 9"));
    }
    for p in [a, b] {
        match piles[p - 1].last() {
            Some(top) if top.rank == play.rank => {}
            top => return Err(format!("pile {p} shows {top:?}, not a {:?}", play.rank)),
        }
    }
    piles[a - 1].pop();
    piles[b - 1].pop();
    Ok(())
}

fn piles_of(deal: &Deal) -> Vec<Vec<Card>> {
    deal.piles().map(<[Card]>::to_vec).collect()
}

/// Every legal pair of piles (0-based, lower first), by the rules: two tops of the same rank.
fn legal_pairs(piles: &[Vec<Card>]) -> Vec<(usize, usize)> {
    let mut legal = Vec::new();
    for a in 0..PILES {
        for b in a + 1..PILES {
            if let (Some(x), Some(y)) = (piles[a].last(), piles[b].last())
                && x.rank == y.rank
            {
                legal.push((a, b));
            }
        }
    }
    legal
}

/// Whether any sequence of moves clears the table: a plain search over the heights, written
/// independently of the engine (no pruning, no probabilities).
fn clearable(deal: &Deal) -> bool {
    fn go(piles: &mut [Vec<Card>], seen: &mut HashMap<Vec<usize>, bool>) -> bool {
        if piles.iter().all(Vec::is_empty) {
            return true;
        }
        let key: Vec<usize> = piles.iter().map(Vec::len).collect();
        if let Some(&known) = seen.get(&key) {
            return known;
        }
        let mut won = false;
        for (a, b) in legal_pairs(piles) {
            let (x, y) = (piles[a].pop(), piles[b].pop());
            won = go(piles, seen);
            piles[a].extend(x);
            piles[b].extend(y);
            if won {
                break;
            }
        }
        seen.insert(key, won);
        won
    }
    go(&mut piles_of(deal), &mut HashMap::new())
}

/// Three piles where the random player wins with 2/3, by hand: tops are three 6s and the fourth
/// 6 lies under one of them. Pairing piles 1 and 3 leaves 6 over 6 in pile 2 and a 7 pair that
/// uncovers nothing useful: lost. Pairing 1 and 2 (then 6-6, then 7-7) or 2 and 3 (then 6-6,
/// then 7-7) wins. Each of the three first moves is equally likely: 2/3.
const TWO_THIRDS: &str = "7S 6S / 6C 6H / 7C 6D / / / / / /";

/// The same gadget three times with other ranks: each copy's first move is a uniform choice
/// among its own three, made independently of the others, so the chance is (2/3)^3 = 8/27.
const EIGHT_27THS: &str = "7S 6S / 6C 6H / 7C 6D / 9S 8S / 8C 8H / 9C 8D / JS TS / TC TH / JC TD";

#[test]
fn hand_worked_positions_give_their_exact_fractions() {
    let mut solver = Solver::new();
    for (text, want, p) in [
        (TWO_THIRDS, "2/3", 2.0 / 3.0),
        (EIGHT_27THS, "8/27", 8.0 / 27.0),
        // An empty table is already won; a lone pair is won in one move.
        ("/ / / / / / / /", "1/1", 1.0),
        ("6S / 6C / / / / / / /", "1/1", 1.0),
        // A pair in one pile can never be removed; an odd count never clears.
        ("6S 6C / / / / / / / /", "0/1", 0.0),
        ("6S / 6C / 6D / / / / / /", "0/1", 0.0),
        // Two last pairs crossed (6 over 7 in one pile, 7 over 6 in the other): each waits for
        // the other, whatever is played first elsewhere.
        ("6S 7S 8S / 7C 6C 8C / 9S / 9C / / / / /", "0/1", 0.0),
    ] {
        let a = solver.analyze(&position(text), ALL);
        let exact = a.exact.as_ref().expect("asked for");
        assert_eq!(fraction_text(exact), want, "{text}");
        assert!(
            (a.probability - p).abs() < 1e-15,
            "{text}: {}",
            a.probability
        );
        assert_eq!(a.winnable, p > 0.0, "{text}");
    }
}

#[test]
fn the_two_thirds_gadget_has_the_moves_worked_out_by_hand() {
    let a = Solver::new().analyze(&position(TWO_THIRDS), ALL);
    let odds: Vec<([u8; 2], f64)> = a
        .moves
        .iter()
        .map(|m| (m.play.piles, m.probability))
        .collect();
    // Best first, ties in pile order; the losing move last.
    assert_eq!(odds, [([1, 2], 1.0), ([2, 3], 1.0), ([1, 3], 0.0)]);
    assert!(a.moves.iter().all(|m| m.play.rank.symbol() == '6'));
    // Both winning lines have the same chance (1/3 * 1 * 1); the first in pile order is shown.
    let line: Vec<[u8; 2]> = a.line.iter().map(|m| m.piles).collect();
    assert_eq!(line, [[1, 2], [2, 3], [1, 3]]);
}

#[test]
fn exact_fractions_match_the_reference_to_1e12() {
    let mut solver = Solver::new();
    let only_exact = Options {
        exact: true,
        ..Options::default()
    };
    for (input, output) in [
        ("sample.in", "sample.out15"),
        ("extra12.in", "extra12.out15"),
        ("random1000.in", "random1000.out15"),
    ] {
        let want = answers(output);
        let deals = deals(input);
        assert_eq!(deals.len(), want.len(), "{input}");
        let mut big_denominators = 0;
        for (i, (deal, want)) in deals.iter().zip(want).enumerate() {
            let a = solver.analyze(deal, only_exact);
            let exact = a.exact.expect("asked for");
            let got = fraction_value(&exact);
            assert!(
                (got - want).abs() <= 1e-12,
                "{input} deal {}: exact {} = {got} vs reference {want}",
                i + 1,
                fraction_text(&exact)
            );
            // The engine's own double agrees with its own fraction far more tightly.
            assert!(
                (got - a.probability).abs() <= 1e-14,
                "{input} deal {}",
                i + 1
            );
            big_denominators += usize::from(exact.denominator_bits() > 64);
        }
        if input == "random1000.in" {
            assert!(
                big_denominators > 0,
                "no denominator needed more than 64 bits"
            );
        }
    }
}

/// Replays `line` from `deal` with the move checker; true when it clears the table.
fn replay(deal: &Deal, line: &[Move]) -> Result<(), String> {
    let mut piles = piles_of(deal);
    for (i, &play) in line.iter().enumerate() {
        apply(&mut piles, play).map_err(|e| format!("move {}: {e}", i + 1))?;
    }
    if piles.iter().all(Vec::is_empty) {
        Ok(())
    } else {
        Err(format!(
            "{} cards left",
            piles.iter().map(Vec::len).sum::<usize>()
        ))
    }
}

#[test]
fn winnable_lines_and_move_odds_hold_on_every_reference_deal() {
    let mut solver = Solver::new();
    let mut fresh = Solver::new();
    let want = answers("random1000.out15");
    let mut winnable = 0;
    for (i, deal) in deals("random1000.in").iter().enumerate() {
        let a: Analysis = solver.analyze(
            deal,
            Options {
                moves: true,
                line: true,
                ..Options::default()
            },
        );
        let n = i + 1;
        // Winnable, by a search that knows nothing of probabilities; and the reference's
        // probability is positive exactly then (its smallest non-zero answer here is far above
        // its printing precision).
        assert_eq!(a.winnable, clearable(deal), "deal {n}");
        assert_eq!(a.winnable, want[i] > 0.0, "deal {n}");
        winnable += usize::from(a.winnable);

        if a.winnable {
            assert_eq!(a.line.len(), 18, "deal {n}");
            replay(deal, &a.line).unwrap_or_else(|e| panic!("deal {n}: {e}"));
        } else {
            assert!(a.line.is_empty(), "deal {n}");
        }

        // Every legal move is listed once, best first, and its odds are the probability of the
        // position after it, solved from scratch.
        let mut legal = 0;
        for x in 0..PILES {
            for y in x + 1..PILES {
                legal += usize::from(deal.pile(x)[3].rank == deal.pile(y)[3].rank);
            }
        }
        assert_eq!(a.moves.len(), legal, "deal {n}");
        assert!(
            a.moves
                .windows(2)
                .all(|w| w[0].probability >= w[1].probability),
            "deal {n}: not best first"
        );
        let mut sum = 0.0;
        for odds in &a.moves {
            let mut after = piles_of(deal);
            apply(&mut after, odds.play).unwrap_or_else(|e| panic!("deal {n}: {e}"));
            let after = Deal::from_piles(&after).expect("a position");
            let solved = fresh.solve(&after).probability;
            assert!(
                (solved - odds.probability).abs() <= 1e-12,
                "deal {n}: move {:?} odds {} vs re-solved {solved}",
                odds.play,
                odds.probability
            );
            sum += odds.probability;
        }
        if legal > 0 {
            assert!(
                (sum / legal as f64 - a.probability).abs() <= 1e-12,
                "deal {n}: the moves' average is not the probability"
            );
        }
    }
    assert!(
        winnable > 100 && winnable < 1000,
        "{winnable} winnable deals"
    );
}

#[test]
fn lines_from_mid_game_positions_replay_and_analysis_is_repeatable() {
    let mut solver = Solver::new();
    let mut rng = fastrand::Rng::with_seed(6);
    let mut checked = 0;
    for _ in 0..300 {
        // A position a few random moves into a random deal.
        let deal = Deal::shuffled(&mut rng);
        let mut piles = piles_of(&deal);
        for _ in 0..rng.usize(1..10) {
            let legal = legal_pairs(&piles);
            let Some(&(a, b)) = legal.get(rng.usize(..legal.len().max(1))) else {
                break;
            };
            piles[a].pop();
            piles[b].pop();
        }
        let start = Deal::from_piles(&piles).expect("a position");
        let a = solver.analyze(&start, ALL);
        assert_eq!(a.winnable, clearable(&start), "{start}");
        if a.winnable {
            let cards: usize = piles.iter().map(Vec::len).sum();
            assert_eq!(a.line.len(), cards / 2, "{start}");
            replay(&start, &a.line).unwrap_or_else(|e| panic!("{start}: {e}"));
            checked += 1;
        }
        let exact = a.exact.as_ref().expect("asked for");
        assert!(
            (fraction_value(exact) - a.probability).abs() <= 1e-14,
            "{start}"
        );
        // The same question again, after another deal filled the table, gets the same answer.
        solver.analyze(&Deal::shuffled(&mut rng), ALL);
        assert_eq!(solver.analyze(&start, ALL), a, "{start}");
    }
    assert!(checked > 30, "only {checked} winnable positions");
}

#[test]
fn asking_for_nothing_extra_changes_nothing() {
    let mut solver = Solver::new();
    for deal in deals("extra12.in") {
        let plain = solver.solve(&deal);
        let a = solver.analyze(&deal, Options::default());
        assert_eq!(a.probability.to_bits(), plain.probability.to_bits());
        assert_eq!(a.states, plain.states);
        assert!(a.exact.is_none() && a.moves.is_empty() && a.line.is_empty());
    }
}

/// Every winning line from a position and the chance a random player follows it (the product of
/// 1/(legal moves) along it), by brute force: no memo, no table, no pruning.
fn all_winning_lines(piles: &mut Vec<Vec<Card>>, chance: f64, found: &mut Vec<f64>) {
    if piles.iter().all(Vec::is_empty) {
        found.push(chance);
        return;
    }
    let legal = legal_pairs(piles);
    let n = legal.len() as f64;
    for (a, b) in legal {
        let (x, y) = (piles[a].pop(), piles[b].pop());
        all_winning_lines(piles, chance / n, found);
        piles[a].extend(x);
        piles[b].extend(y);
    }
}

/// The chance of following `line` from `deal`, by the rules.
fn chance_of(deal: &Deal, line: &[Move]) -> f64 {
    let mut piles = piles_of(deal);
    let mut chance = 1.0;
    for &play in line {
        let legal = legal_pairs(&piles).len();
        chance /= legal as f64;
        apply(&mut piles, play).expect("a legal move");
    }
    chance
}

#[test]
fn the_line_is_the_one_a_random_player_most_likely_follows() {
    let mut solver = Solver::new();
    let mut rng = fastrand::Rng::with_seed(17);
    let mut compared = 0;
    let mut not_greedy = 0;
    while compared < 150 {
        // Small positions (at most 14 cards) keep the brute force cheap.
        let deal = Deal::shuffled(&mut rng);
        let piles: Vec<Vec<Card>> = deal
            .piles()
            .map(|p| p[..rng.usize(0..=2)].to_vec())
            .collect();
        let start = Deal::from_piles(&piles).expect("a position");
        let a = solver.analyze(&start, ALL);
        if !a.winnable {
            continue;
        }
        let mut found = Vec::new();
        all_winning_lines(&mut piles_of(&start), 1.0, &mut found);
        let best = found.iter().copied().fold(0.0, f64::max);
        let ours = chance_of(&start, &a.line);
        assert!(
            (ours - best).abs() <= 1e-15,
            "{start}: line {ours} vs best {best}"
        );
        // The brute force also sums to the probability: independent check of the engine.
        let total: f64 = found.iter().sum();
        assert!((total - a.probability).abs() <= 1e-12, "{start}");
        // Would "take the move with the best odds" have found it? Count where it would not.
        let first = a.moves.first().map(|m| m.play);
        not_greedy += usize::from(first != a.line.first().copied());
        compared += 1;
    }
    // Not a tautology: on some positions the likeliest line does not start with the best move.
    assert!(
        not_greedy > 0,
        "the likeliest line always began with the best move"
    );
}
