//! The 36-card deck: ranks, suits and cards, parsed from their two-byte symbols.
//!
//! Parsing goes through 256-entry tables so that reading a card is two loads, whatever the byte.

use std::fmt;
use std::str::FromStr;

use super::CARDS;

/// The nine ranks of the 36-card deck, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rank {
    Six,
    Seven,
    Eight,
    Nine,
    Ten,
    Jack,
    Queen,
    King,
    Ace,
}

impl Rank {
    /// All ranks, in the order of their index.
    pub const ALL: [Rank; 9] = [
        Rank::Six,
        Rank::Seven,
        Rank::Eight,
        Rank::Nine,
        Rank::Ten,
        Rank::Jack,
        Rank::Queen,
        Rank::King,
        Rank::Ace,
    ];

    /// A dense index in `0..9`, for tables indexed by rank.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The rank's letter as the UVa format writes it (`6`..`9`, `T`, `J`, `Q`, `K`, `A`).
    pub fn symbol(self) -> char {
        char::from(self.byte())
    }

    pub(crate) fn byte(self) -> u8 {
        b"6789TJQKA"[self.index()]
    }

    /// By table rather than by `match`: a file's cards come in random order, and the jump
    /// table a `match` compiles to mispredicted on nearly every card (half the reader's time).
    fn from_symbol(c: u8) -> Option<Rank> {
        const RANKS: [u8; 256] = symbol_table(b"6789TJQKA");
        Rank::ALL.get(usize::from(RANKS[usize::from(c)])).copied()
    }
}

/// The four suits. The game ignores them; they matter only for telling cards apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Suit {
    Spades,
    Clubs,
    Diamonds,
    Hearts,
}

impl Suit {
    /// All suits, in the order of their index.
    pub const ALL: [Suit; 4] = [Suit::Spades, Suit::Clubs, Suit::Diamonds, Suit::Hearts];

    /// A dense index in `0..4`.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The suit's letter as the UVa format writes it.
    pub fn symbol(self) -> char {
        char::from(self.byte())
    }

    pub(crate) fn byte(self) -> u8 {
        b"SCDH"[self.index()]
    }

    fn from_symbol(c: u8) -> Option<Suit> {
        const SUITS: [u8; 256] = symbol_table(b"SCDH");
        Suit::ALL.get(usize::from(SUITS[usize::from(c)])).copied()
    }
}

/// For each byte, its position in `symbols` (upper or lower case), or 255 for any other byte.
const fn symbol_table(symbols: &[u8]) -> [u8; 256] {
    let mut t = [u8::MAX; 256];
    let mut i = 0;
    while i < symbols.len() {
        t[symbols[i] as usize] = i as u8;
        t[symbols[i].to_ascii_lowercase() as usize] = i as u8;
        i += 1;
    }
    t
}

/// One card of the 36-card deck.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Card {
    pub rank: Rank,
    pub suit: Suit,
}

impl Card {
    /// A dense index in `0..36`, used to detect duplicates without allocating.
    pub fn index(self) -> usize {
        self.rank.index() * 4 + self.suit.index()
    }

    /// The whole deck, in the order of [`Card::index`].
    pub const ALL: [Card; CARDS] = {
        let mut all = [Card {
            rank: Rank::Six,
            suit: Suit::Spades,
        }; CARDS];
        let mut i = 0;
        while i < CARDS {
            all[i] = Card {
                rank: Rank::ALL[i / 4],
                suit: Suit::ALL[i % 4],
            };
            i += 1;
        }
        all
    };
}

impl Card {
    /// The card whose rank and suit symbols are these two bytes, in either case.
    pub(crate) fn from_bytes(rank: u8, suit: u8) -> Option<Card> {
        Some(Card {
            rank: Rank::from_symbol(rank)?,
            suit: Suit::from_symbol(suit)?,
        })
    }
}

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            std::str::from_utf8(&[self.rank.byte(), self.suit.byte()]).map_err(|_| fmt::Error)?,
        )
    }
}

impl FromStr for Card {
    type Err = ();

    /// Accepts exactly two characters, rank then suit, in either case (`AS`, `as`, `tH`).
    fn from_str(s: &str) -> Result<Card, ()> {
        // Every card symbol is ASCII, so a card is exactly two bytes.
        match *s.as_bytes() {
            [r, s] => Card::from_bytes(r, s).ok_or(()),
            _ => Err(()),
        }
    }
}
