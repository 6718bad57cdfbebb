//! Deals packed for the wire (`SolveRequest.packed_deals`): one byte a card, [`Card::index`], pile
//! by pile, each bottom card first. A third of the bytes of the text, and nothing to format on
//! the client or to parse on the daemon: at hundreds of thousands of deals a second, writing and
//! reading 108 bytes of text a deal was most of what the client spent beside the network.

use super::{CARDS, Card, Deal, DealError, PILE_HEIGHT, PILES, Place};

impl Deal {
    /// Bytes of one packed deal.
    pub const PACKED: usize = CARDS;

    /// Appends this deal's 36 bytes to `out`; a position (not a full deal) has no packed form
    /// and appends nothing: false.
    pub fn pack_into(&self, out: &mut Vec<u8>) -> bool {
        if !self.is_full() {
            return false;
        }
        out.extend(self.piles.iter().flatten().map(|card| card.index() as u8));
        true
    }

    /// The deal packed in `bytes`, checked as a text deal is: every byte a card, no card twice,
    /// 36 of them (fewer is the last, cut-short deal of a request).
    pub fn from_packed(bytes: &[u8]) -> Result<Deal, DealError> {
        if bytes.len() != Deal::PACKED {
            return Err(DealError::CardCount { found: bytes.len() });
        }
        let mut piles = [[Card::ALL[0]; PILE_HEIGHT]; PILES];
        for (i, (&byte, place)) in bytes.iter().zip(piles.iter_mut().flatten()).enumerate() {
            *place = *Card::ALL
                .get(usize::from(byte))
                .ok_or(DealError::NotACardByte {
                    place: Place {
                        pile: i / PILE_HEIGHT + 1,
                        position: i % PILE_HEIGHT + 1,
                    },
                    byte,
                })?;
        }
        Deal::new(piles)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deal::Form;

    const SAMPLE: &str = "AS 9S 6C KS\nJC QH AC KH\n7S QD JD 9D\nJS 7H 6D 7D\n8H TS 9H QC\n\
                          6S 8S AH TH\n8D 7C JH KC\n6H QS TC 9C\n8C AD KD TD\n";

    #[test]
    fn the_sample_packs_card_by_card_and_back() {
        let deal = Deal::parse(SAMPLE).unwrap();
        let mut packed = Vec::new();
        assert!(deal.pack_into(&mut packed));
        // Worked by hand: AS = 8 * 4 + 0, 9S = 3 * 4 + 0, 6C = 0 * 4 + 1, KS = 7 * 4 + 0; the
        // last pile's top card TD = 4 * 4 + 2.
        assert_eq!(packed.len(), 36);
        assert_eq!(&packed[..4], &[32, 12, 1, 28]);
        assert_eq!(packed[35], 18);
        assert_eq!(Deal::from_packed(&packed), Ok(deal));
    }

    #[test]
    fn random_deals_survive_packing() {
        let mut rng = fastrand::Rng::with_seed(34);
        let mut packed = Vec::new();
        for _ in 0..1000 {
            let deal = Deal::shuffled(&mut rng);
            packed.clear();
            assert!(deal.pack_into(&mut packed));
            assert_eq!(Deal::from_packed(&packed), Ok(deal));
        }
    }

    #[test]
    fn a_position_does_not_pack() {
        let position = Deal::parse("7S 6S / 6C 6H / / 7c 6d / / / / / AS").unwrap();
        let mut packed = vec![9];
        assert!(!position.pack_into(&mut packed));
        assert_eq!(packed, [9]);
    }

    #[test]
    fn bad_packed_deals_say_what_and_where() {
        let mut packed = Vec::new();
        Deal::parse(SAMPLE).unwrap().pack_into(&mut packed);

        let mut not_a_card = packed.clone();
        not_a_card[5] = 36; // pile 2, position 2
        let e = Deal::from_packed(&not_a_card).unwrap_err();
        assert_eq!(
            e,
            DealError::NotACardByte {
                place: Place {
                    pile: 2,
                    position: 2
                },
                byte: 36
            }
        );
        assert_eq!(
            e.to_string(),
            "pile 2, position 2: byte 36 is not a card (a packed card is rank * 4 + suit, 0 to 35)"
        );

        let mut twice = packed.clone();
        twice[35] = twice[0]; // AS again, as the last pile's top card
        match Deal::from_packed(&twice) {
            Err(DealError::DuplicateCard {
                first,
                second,
                form: Form::Deal,
                ..
            }) => {
                assert_eq!((first.pile, first.position), (1, 1));
                assert_eq!((second.pile, second.position), (9, 4));
            }
            other => panic!("expected a duplicate, got {other:?}"),
        }

        assert_eq!(
            Deal::from_packed(&packed[..20]),
            Err(DealError::CardCount { found: 20 })
        );
    }
}
