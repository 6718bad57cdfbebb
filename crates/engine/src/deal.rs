//! Cards, deals and their validation.
//!
//! A deal is nine piles of four cards, each pile listed bottom card first and top card last, as in
//! UVa 1637. Everything that a client or a file controls enters the program through this module, so
//! every way it can be wrong has its own [`DealError`] variant that names the pile, the position and
//! the offending token. Nothing here panics on input.

use std::fmt;
use std::str::FromStr;

mod card;
pub mod frame;
mod packed;
mod pile_lines;
pub mod reader;
pub use card::{Card, Rank, Suit};
pub use reader::{BadDeal, DealFileError, DealReader};

/// Number of piles on the table.
pub const PILES: usize = 9;
/// Cards per pile in a full deal.
pub const PILE_HEIGHT: usize = 4;
/// Cards in a deal: one 36-card deck (6 to ace in four suits).
pub const CARDS: usize = PILES * PILE_HEIGHT;

/// Where a card lies: pile and position are 1-based, position 1 being the bottom card, as a person
/// reading the deal would count them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub pile: usize,
    pub position: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pile {}, position {}", self.pile, self.position)
    }
}

/// Everything that can be wrong with one deal. Each variant says where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DealError {
    /// A token that is not a card.
    #[error(
        "{place}: {token} is not a card (want a rank of 6 7 8 9 T J Q K A then a suit of S C D H, like AS)"
    )]
    BadCard { place: Place, token: Token },
    /// A pile line that does not hold four cards.
    #[error("pile {pile} has {found} {}; a pile has 4", cards(*found))]
    PileSize { pile: usize, found: usize },
    /// A `/` among a pile line's cards: slashes separate piles only in the one-line position
    /// form, so this is a typo, and the slash is not counted as a card.
    #[error(
        "pile {pile}'s line has a `/` beside {found} {}; a slash separates piles only in a one-line position (nine piles, eight slashes)",
        cards(*found)
    )]
    StraySlash { pile: usize, found: usize },
    /// A position (`/` form) that does not have nine piles.
    #[error("the position has {found} piles; a position has 9, separated by 8 slashes")]
    PileCount { found: usize },
    /// A pile of a position with more than four cards.
    #[error("pile {pile} has {found} cards; a pile has at most 4")]
    PileTooHigh { pile: usize, found: usize },
    /// A deal that does not hold 36 cards in all.
    #[error("the deal has {found} {}; a deal has 36 (9 piles of 4)", cards(*found))]
    CardCount { found: usize },
    /// A byte of a packed deal (the wire's `packed_deals`) that is no card's.
    #[error("{place}: byte {byte} is not a card (a packed card is rank * 4 + suit, 0 to 35)")]
    NotACardByte { place: Place, byte: u8 },
    /// A card that appears twice: a deal is one 36-card deck, and a position is what is left of
    /// one.
    #[error("{card} appears twice, at {first} and at {second}; {form}")]
    DuplicateCard {
        card: Card,
        first: Place,
        second: Place,
        /// What the cards were laid out as, which says the rule broken.
        form: Form,
    },
}

/// What a set of piles is: a full deal (four cards in every pile) or a mid-game position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Deal,
    Position,
}

impl fmt::Display for Form {
    /// The rule a duplicate card breaks: a position need not hold 36 cards, so only a full deal
    /// is said to be a deck.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Form::Deal => "a deal is one 36-card deck",
            Form::Position => "a position holds each card at most once",
        })
    }
}

fn cards(n: usize) -> &'static str {
    if n == 1 { "card" } else { "cards" }
}

/// What kind of mistake a [`DealError`] is, for protocols that report a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DealErrorKind {
    BadCard,
    CardCount,
    DuplicateCard,
}

impl DealError {
    /// The error's kind: a wrong pile size is a card-count problem.
    pub fn kind(&self) -> DealErrorKind {
        match self {
            DealError::BadCard { .. }
            | DealError::StraySlash { .. }
            | DealError::NotACardByte { .. } => DealErrorKind::BadCard,
            DealError::PileSize { .. }
            | DealError::CardCount { .. }
            | DealError::PileCount { .. }
            | DealError::PileTooHigh { .. } => DealErrorKind::CardCount,
            DealError::DuplicateCard { .. } => DealErrorKind::DuplicateCard,
        }
    }
}

pub use crate::token::Token;

/// A card token is two characters; 16 shows a typo in context without quoting a whole line.
const TOKEN_CHARS: usize = 16;

fn quote(raw: &str) -> Token {
    Token::cut(raw, TOKEN_CHARS)
}

/// A validated deal, or a mid-game position: nine piles of up to four distinct cards, each pile
/// bottom first. A full deal (the UVa input) has four cards in every pile; a position is what is
/// left after some moves, so piles may be shorter or empty. One type serves both because the game,
/// and the engine, only ever look at the pile heights and the cards below them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Deal {
    /// Cards above a pile's height are [`Deal::FILLER`], so equal positions compare equal.
    piles: [[Card; PILE_HEIGHT]; PILES],
    heights: [u8; PILES],
}

impl Deal {
    /// What fills the unused places of short piles.
    const FILLER: Card = Card {
        rank: Rank::Six,
        suit: Suit::Spades,
    };

    /// Checks that the 36 cards form one deck and builds the deal.
    pub fn new(piles: [[Card; PILE_HEIGHT]; PILES]) -> Result<Deal, DealError> {
        Deal::from_piles(&piles)
    }

    /// Builds a deal or a position from its piles, each bottom card first: exactly nine piles of
    /// at most four cards, no card twice. The 36-card rule belongs to full deals only, so any
    /// number of cards is accepted here (an empty table is a position already won).
    pub fn from_piles<P: AsRef<[Card]>>(piles: &[P]) -> Result<Deal, DealError> {
        if piles.len() != PILES {
            return Err(DealError::PileCount { found: piles.len() });
        }
        let mut deal = Deal {
            piles: [[Deal::FILLER; PILE_HEIGHT]; PILES],
            heights: [0; PILES],
        };
        // One bit per card; the places are worked out only for the error, which is rare.
        let mut seen = 0u64;
        let form = match piles.iter().all(|p| p.as_ref().len() == PILE_HEIGHT) {
            true => Form::Deal,
            false => Form::Position,
        };
        for (p, pile) in piles.iter().enumerate() {
            let pile = pile.as_ref();
            if pile.len() > PILE_HEIGHT {
                return Err(DealError::PileTooHigh {
                    pile: p + 1,
                    found: pile.len(),
                });
            }
            for (i, card) in pile.iter().enumerate() {
                let bit = 1u64 << card.index();
                if seen & bit != 0 {
                    return Err(Deal::duplicate(piles, *card, p, i, form));
                }
                seen |= bit;
                deal.piles[p][i] = *card;
            }
            deal.heights[p] = pile.len() as u8;
        }
        Ok(deal)
    }

    /// The error for `card`, met again at pile `p`, position `i` (0-based): where it was first.
    fn duplicate<P: AsRef<[Card]>>(
        piles: &[P],
        card: Card,
        p: usize,
        i: usize,
        form: Form,
    ) -> DealError {
        let first = piles
            .iter()
            .enumerate()
            .flat_map(|(q, pile)| {
                pile.as_ref()
                    .iter()
                    .enumerate()
                    .map(move |(j, c)| (q, j, c))
            })
            .find(|&(_, _, &c)| c == card)
            .map_or(
                Place {
                    pile: p + 1,
                    position: i + 1,
                },
                |(q, j, _)| Place {
                    pile: q + 1,
                    position: j + 1,
                },
            );
        DealError::DuplicateCard {
            card,
            first,
            second: Place {
                pile: p + 1,
                position: i + 1,
            },
            form,
        }
    }

    /// A uniformly shuffled deck dealt into nine piles. The same seed gives the same deals.
    pub fn shuffled(rng: &mut fastrand::Rng) -> Deal {
        let mut deck: [Card; CARDS] = std::array::from_fn(|i| Card::ALL[i]);
        rng.shuffle(&mut deck);
        let piles = std::array::from_fn(|p| std::array::from_fn(|i| deck[p * PILE_HEIGHT + i]));
        Deal {
            piles,
            heights: [PILE_HEIGHT as u8; PILES],
        }
    }

    /// Pile `p` (0-based), bottom card first; empty for an empty pile or `p` past the ninth.
    pub fn pile(&self, p: usize) -> &[Card] {
        match (self.piles.get(p), self.heights.get(p)) {
            (Some(pile), Some(&h)) => &pile[..usize::from(h)],
            _ => &[],
        }
    }

    /// The nine piles in order, each bottom card first.
    pub fn piles(&self) -> impl ExactSizeIterator<Item = &[Card]> + '_ {
        (0..PILES).map(|p| self.pile(p))
    }

    /// Whether this is a full deal (four cards in every pile) rather than a mid-game position.
    pub fn is_full(&self) -> bool {
        self.heights == [PILE_HEIGHT as u8; PILES]
    }

    /// Parses a deal or a position.
    ///
    /// - A full deal is 36 cards separated by any whitespace, pile by pile, each pile bottom to
    ///   top. This is the form the gRPC API carries; line breaks do not matter here.
    /// - A position is nine groups separated by `/`, each a pile bottom to top, an empty group for
    ///   an empty pile: `7S 6S / 6C 6H / / ...`. Any text with a `/` is read this way.
    pub fn parse(text: &str) -> Result<Deal, DealError> {
        if let Some(deal) = Deal::one_line(text.as_bytes()) {
            return Ok(deal);
        }
        if text.contains('/') {
            return Deal::parse_position(text);
        }
        let mut builder = DealBuilder::default();
        for token in text.split_whitespace() {
            builder.push(token)?;
        }
        builder.finish()
    }

    /// A valid full deal written as clients write one (36 cards, each but the last followed by
    /// one space or line feed, and at most one line feed after the last: 107 or 108 bytes, the
    /// one-line form and the UVa layout that `Display` writes), read at fixed places; `None` for
    /// anything else, bad deals included, which the general parser reads to say what is wrong.
    /// The daemon parses every deal it is sent, and tokenising cost several times this.
    fn one_line(text: &[u8]) -> Option<Deal> {
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        if text.len() != 3 * CARDS - 1 {
            return None;
        }
        let mut piles = [[Deal::FILLER; PILE_HEIGHT]; PILES];
        for (i, card) in piles.iter_mut().flatten().enumerate() {
            let at = 3 * i;
            let [rank, suit] = *text.get(at..at + 2)? else {
                return None;
            };
            if text.get(at + 2).is_some_and(|&b| b != b' ' && b != b'\n') {
                return None;
            }
            *card = Card::from_bytes(rank, suit)?;
        }
        Deal::new(piles).ok()
    }

    /// Counts the groups before splitting and collects nothing: a client's text may be megabytes
    /// of slashes, and parsing must not cost memory in proportion.
    fn parse_position(text: &str) -> Result<Deal, DealError> {
        let found = text.bytes().filter(|&b| b == b'/').count() + 1;
        if found != PILES {
            return Err(DealError::PileCount { found });
        }
        let mut piles = [[Deal::FILLER; PILE_HEIGHT]; PILES];
        let mut heights = [0usize; PILES];
        for (p, group) in text.split('/').enumerate().take(PILES) {
            let found = group.split_whitespace().count();
            if found > PILE_HEIGHT {
                return Err(DealError::PileTooHigh { pile: p + 1, found });
            }
            for (i, token) in group.split_whitespace().enumerate() {
                piles[p][i] = token.parse::<Card>().map_err(|()| DealError::BadCard {
                    place: Place {
                        pile: p + 1,
                        position: i + 1,
                    },
                    token: quote(token),
                })?;
            }
            heights[p] = found;
        }
        let slices: [&[Card]; PILES] = std::array::from_fn(|p| &piles[p][..heights[p]]);
        Deal::from_piles(&slices)
    }
}

impl FromStr for Deal {
    type Err = DealError;

    fn from_str(s: &str) -> Result<Deal, DealError> {
        Deal::parse(s)
    }
}

impl fmt::Display for Deal {
    /// A full deal in the UVa layout, one pile per line, bottom card first; a position on one
    /// line in the `/` form that [`Deal::parse`] reads. Written into one buffer and handed over
    /// in one piece: `patience client` prints every deal it sends, and printing it card by card
    /// through `write!` was about a quarter of the client's CPU.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Three bytes per card and two per `/`: a full deal takes 108, a position at most 124.
        let mut text = [0u8; 128];
        let mut len = 0;
        let mut put = |bytes: &[u8]| {
            if let Some(place) = text.get_mut(len..len + bytes.len()) {
                place.copy_from_slice(bytes);
                len += bytes.len();
            }
        };
        let full = self.is_full();
        for (p, pile) in self.piles().enumerate() {
            if p > 0 && !full {
                put(b" /");
            }
            for (i, card) in pile.iter().enumerate() {
                let space: &[u8] = if full && i == 0 { b"" } else { b" " };
                put(space);
                put(&[card.rank.byte(), card.suit.byte()]);
            }
            if full {
                put(b"\n");
            }
        }
        let text = text.get(..len).ok_or(fmt::Error)?;
        f.write_str(std::str::from_utf8(text).map_err(|_| fmt::Error)?)
    }
}

/// Collects cards one token at a time, so that the string parser and the file reader report the
/// same errors with the same places. The cards go straight into their piles: a file's reader
/// builds every deal this way, and copying them out of a list of options afterwards cost it a
/// sixth of its instructions.
pub(crate) struct DealBuilder {
    piles: [[Card; PILE_HEIGHT]; PILES],
    count: usize,
}

impl Default for DealBuilder {
    fn default() -> Self {
        DealBuilder {
            piles: [[Deal::FILLER; PILE_HEIGHT]; PILES],
            count: 0,
        }
    }
}

impl DealBuilder {
    /// Adds the next card; a token beyond the 36th is only counted.
    pub(crate) fn push(&mut self, token: &str) -> Result<(), DealError> {
        let place = Place {
            pile: self.count / PILE_HEIGHT + 1,
            position: self.count % PILE_HEIGHT + 1,
        };
        if self.count < CARDS {
            let card = token.parse::<Card>().map_err(|()| DealError::BadCard {
                place,
                token: quote(token),
            })?;
            self.put(card);
        }
        self.count += 1;
        Ok(())
    }

    /// Adds a card already read; like [`DealBuilder::push`] with its token.
    pub(crate) fn push_card(&mut self, card: Card) {
        self.put(card);
        self.count += 1;
    }

    /// Writes `card` in the next place, if there is one (past the 36th, cards are only counted).
    fn put(&mut self, card: Card) {
        if let Some(slot) = self
            .piles
            .get_mut(self.count / PILE_HEIGHT)
            .and_then(|pile| pile.get_mut(self.count % PILE_HEIGHT))
        {
            *slot = card;
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.count
    }

    pub(crate) fn finish(self) -> Result<Deal, DealError> {
        if self.count != CARDS {
            return Err(DealError::CardCount { found: self.count });
        }
        Deal::new(self.piles)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "AS 9S 6C KS JC QH AC KH 7S QD JD KD QS TS JS 9H 6D TD AD 8S \
                          QC TH KC 8D 8C 9D TC 7C 9C 7H JH 7D 8H 6S AH 6H";

    /// The one-line form and the UVa layout read at fixed places, and the same texts read by
    /// tokens (forced by a second space after the first card), give the same deals and errors.
    #[test]
    fn a_deal_read_at_fixed_places_is_the_deal_read_by_tokens() {
        let mut rng = fastrand::Rng::with_seed(2145);
        let mut bad = 0;
        for i in 0..1000 {
            let mut text = Deal::shuffled(&mut rng).to_string();
            if i % 2 == 0 {
                text = text.replace('\n', " ");
                text.pop();
            }
            match i % 5 {
                1 => {
                    let first = text[0..2].to_string();
                    text.replace_range(9..11, &first);
                }
                2 => text.replace_range(30..32, "1H"),
                3 => text.replace_range(2..3, "x"),
                _ => {}
            }
            let tokens = text.replacen(' ', "  ", 1);
            let (fixed, by_tokens) = (Deal::parse(&text), Deal::parse(&tokens));
            bad += usize::from(fixed.is_err());
            assert_eq!(fixed, by_tokens, "{text}");
        }
        assert!(bad >= 550, "{bad} bad deals");
    }

    #[test]
    fn parses_a_deal_on_one_line_bottom_first() {
        let deal = Deal::parse(SAMPLE).unwrap();
        assert_eq!(deal.pile(0)[0].to_string(), "AS");
        assert_eq!(deal.pile(0)[3].to_string(), "KS");
        assert_eq!(deal.pile(8)[3].to_string(), "6H");
        assert!(deal.is_full());
    }

    #[test]
    fn accepts_lower_case_tabs_and_line_breaks() {
        let messy = SAMPLE.to_lowercase().replace(' ', "\t\r\n ");
        assert_eq!(Deal::parse(&messy), Deal::parse(SAMPLE));
    }

    #[test]
    fn display_round_trips() {
        let deal = Deal::parse(SAMPLE).unwrap();
        assert_eq!(Deal::parse(&deal.to_string()), Ok(deal));
    }

    /// The two layouts, written out by hand from the UVa format and the `/` form.
    #[test]
    fn displays_a_deal_as_nine_pile_lines_and_a_position_on_one_line() {
        let deal = Deal::parse(SAMPLE).unwrap();
        let lines: Vec<String> = SAMPLE
            .split(' ')
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .chunks(4)
            .map(|pile| pile.join(" ") + "\n")
            .collect();
        assert_eq!(deal.to_string(), lines.concat());
        let position = Deal::parse("AS 9S / / 6C / KS JC QH AC / / / / / 8S").unwrap();
        assert_eq!(
            position.to_string(),
            " AS 9S / / 6C / KS JC QH AC / / / / / 8S"
        );
    }

    #[test]
    fn names_the_place_and_token_of_a_bad_card() {
        let bad = SAMPLE.replacen("QD", "QX", 1);
        let err = Deal::parse(&bad).unwrap_err();
        assert_eq!(
            err,
            DealError::BadCard {
                place: Place {
                    pile: 3,
                    position: 2
                },
                token: quote("QX")
            }
        );
        let msg = err.to_string();
        assert!(
            msg.contains("pile 3, position 2") && msg.contains("\"QX\""),
            "{msg}"
        );
        assert_eq!(err.kind(), DealErrorKind::BadCard);
    }

    #[test]
    fn counts_missing_and_extra_cards() {
        let short: Vec<&str> = SAMPLE.split(' ').take(35).collect();
        assert_eq!(
            Deal::parse(&short.join(" ")),
            Err(DealError::CardCount { found: 35 })
        );
        let long = format!("{SAMPLE} 6S");
        assert_eq!(Deal::parse(&long), Err(DealError::CardCount { found: 37 }));
        assert_eq!(Deal::parse(""), Err(DealError::CardCount { found: 0 }));
    }

    #[test]
    fn finds_both_places_of_a_duplicate() {
        let dup = SAMPLE.replacen("9S", "AS", 1);
        match Deal::parse(&dup) {
            Err(DealError::DuplicateCard {
                card,
                first,
                second,
                form,
            }) => {
                assert_eq!(form, Form::Deal);
                assert_eq!(card.to_string(), "AS");
                assert_eq!((first.pile, first.position), (1, 1));
                assert_eq!((second.pile, second.position), (1, 2));
            }
            other => panic!("expected a duplicate, got {other:?}"),
        }
    }

    #[test]
    fn quotes_hostile_tokens_safely() {
        let long = "Q\u{7}".repeat(1000);
        let err = Deal::parse(&long).unwrap_err();
        let msg = err.to_string();
        assert!(msg.len() < 200, "{msg}");
        assert!(msg.contains("\\u{7}"), "{msg}");
    }

    #[test]
    fn parses_a_mid_game_position() {
        let pos = Deal::parse("7S 6S / 6C 6H / / 7c 6d / / / / / AS").unwrap();
        assert!(!pos.is_full());
        let heights: Vec<usize> = pos.piles().map(<[Card]>::len).collect();
        assert_eq!(heights, [2, 2, 0, 2, 0, 0, 0, 0, 1]);
        assert_eq!(pos.pile(3)[1].to_string(), "6D");
        assert_eq!(Deal::parse(&pos.to_string()), Ok(pos));
        // Nine full groups are the same deal as the 36-card form.
        let full = Deal::parse(SAMPLE).unwrap();
        let groups: Vec<String> = full
            .piles()
            .map(|p| p.iter().map(Card::to_string).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(Deal::parse(&groups.join("/")), Ok(full));
        assert_eq!(
            Deal::parse("/ / / / / / / /").map(|d| d.piles().all(<[Card]>::is_empty)),
            Ok(true)
        );
    }

    #[test]
    fn names_what_is_wrong_with_a_position() {
        assert_eq!(
            Deal::parse("6S / 6C / 7S"),
            Err(DealError::PileCount { found: 3 })
        );
        let high = Deal::parse("6S 6C 6D 6H 7S / / / / / / / /").unwrap_err();
        assert_eq!(high, DealError::PileTooHigh { pile: 1, found: 5 });
        assert!(high.to_string().contains("pile 1 has 5 cards"), "{high}");
        assert_eq!(high.kind(), DealErrorKind::CardCount);
        let bad = Deal::parse("6S / / 6C XX / / / / / /").unwrap_err();
        assert!(
            bad.to_string().contains("pile 3, position 2: \"XX\""),
            "{bad}"
        );
        let dup = Deal::parse("6S / / / / / / / 7C 6s /").unwrap_err();
        assert!(
            dup.to_string()
                .contains("6S appears twice, at pile 1, position 1 and at pile 8, position 2"),
            "{dup}"
        );
        // Rough edge 7: a position need not be a whole deck, so its duplicate does not say so.
        assert!(!dup.to_string().contains("36-card"), "{dup}");
        assert!(dup.to_string().contains("position"), "{dup}");
        assert_eq!(dup.kind(), DealErrorKind::DuplicateCard);
    }

    #[test]
    fn rejects_tokens_that_are_almost_cards() {
        for token in ["A", "ASS", "1S", "10S", "AZ", "ÄS", ""] {
            assert!(token.parse::<Card>().is_err(), "{token:?}");
        }
        for (i, card) in Card::ALL.iter().enumerate() {
            assert_eq!(card.index(), i);
            assert_eq!(card.to_string().parse::<Card>(), Ok(*card));
        }
    }
}
