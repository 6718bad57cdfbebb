//! Exact probabilities with fixed-width integers, read off the table a solve left behind.
//!
//! A position with `c` cards left has probability `N / 27720^(c/2)` for an integer `N`: 27720 is
//! lcm(1..=12), a position has at most 12 legal moves, and its value is the average of its
//! children's, so `N = (27720 / moves) * (sum of the children's N)`. A full deal's `N` is below
//! `27720^18 < 2^266`, so 320-bit integers hold every value and every partial sum: no heap, no
//! gcd until the answer is reduced once at the end.
//!
//! The search computes `N` beside each probability when asked (`search.rs`, `EXACT`): a frame's
//! children are all in the table by the time it is done, so their `N` are a lookup each, and a
//! child the pruning knew lost is not a child at all (it counts 0). What is left for here is the
//! fraction: reducing `N / 27720^(c/2)` once.

use std::fmt;
use std::str::FromStr;

use ruint::aliases::U320;

/// lcm(1..=12): 27720 / moves is an integer for every position.
pub(super) const LCM: u64 = 27720;

/// An `N` as the search keeps it: five 64-bit limbs, least significant first (320 bits).
pub(super) type Limbs = [u64; 5];

/// The limbs the `N` of a position with `p` pairs left can need: `N <= 27720^p` (a sure win), so
/// `ceil(bits / 64)`. The search adds and scales only that many (the others are 0), so the many
/// positions near the end of a deal cost one or two limbs of arithmetic, not five.
pub(super) const WIDTH: [u8; 19] = [1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 5];

/// `sum += x` over the low `width` limbs: both are below `2^(64 * width)`, and so is the sum
/// when `width` is the parent's (a parent's sum is at most `27720^p`). One arm per width, each
/// unrolled without bounds checks: a loop to a width known only at run time made exact solving
/// cost 45% more instructions over plain solving (cachegrind, 1,000 deals: 74M against 51M).
#[inline(always)]
pub(super) fn add(sum: &mut Limbs, x: &Limbs, width: usize) {
    match width {
        1 => add_n::<1>(sum, x),
        2 => add_n::<2>(sum, x),
        3 => add_n::<3>(sum, x),
        4 => add_n::<4>(sum, x),
        _ => add_n::<5>(sum, x),
    }
}

#[inline(always)]
fn add_n<const N: usize>(sum: &mut Limbs, x: &Limbs) {
    let mut carry = false;
    for i in 0..N {
        let (t, c1) = sum[i].overflowing_add(x[i]);
        let (t, c2) = t.overflowing_add(u64::from(carry));
        sum[i] = t;
        carry = c1 | c2;
    }
}

/// `sum * by` over the low `width` limbs, the rest 0: the product is a position's `N`, which
/// fits `width` limbs.
#[inline(always)]
pub(super) fn scale(sum: &Limbs, by: u64, width: usize) -> Limbs {
    match width {
        1 => scale_n::<1>(sum, by),
        2 => scale_n::<2>(sum, by),
        3 => scale_n::<3>(sum, by),
        4 => scale_n::<4>(sum, by),
        _ => scale_n::<5>(sum, by),
    }
}

#[inline(always)]
fn scale_n<const N: usize>(sum: &Limbs, by: u64) -> Limbs {
    let mut out = [0; 5];
    let mut carry = 0u128;
    for i in 0..N {
        let t = u128::from(sum[i]) * u128::from(by) + carry;
        out[i] = t as u64;
        carry = t >> 64;
    }
    out
}

/// A probability as a fraction: in lowest terms when the solver made it, as written when it was
/// read from text (see its [`FromStr`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fraction {
    numerator: U320,
    denominator: U320,
}

impl Fraction {
    /// `n / 27720^pairs` in lowest terms. 27720 = 2^3 * 3^2 * 5 * 7 * 11, so only those primes
    /// can be shared, and for each, `n mod p^e` (which fits 64 bits) tells how often.
    pub(super) fn reduced(mut n: U320, pairs: u32) -> Fraction {
        if n == U320::ZERO {
            return Fraction {
                numerator: n,
                denominator: U320::from(1u64),
            };
        }
        let mut denominator = U320::from(1u64);
        let twos = (3 * pairs).min(n.trailing_zeros() as u32);
        n >>= twos as usize;
        denominator <<= (3 * pairs - twos) as usize;
        for (p, e) in [(3u64, 2 * pairs), (5, pairs), (7, pairs), (11, pairs)] {
            let prime = U320::from(p);
            // p^e fits 64 bits for every exponent a deal can need (3^36, 11^18), so one 320-bit
            // remainder tells how often p divides n, up to e.
            let shared = match p.checked_pow(e) {
                Some(full) => {
                    let rest = n % U320::from(full);
                    if rest == U320::ZERO {
                        e
                    } else {
                        valuation(rest.as_limbs()[0], p).min(e)
                    }
                }
                None => (0..e)
                    .take_while(|&k| n % prime.pow(U320::from(k + 1)) == U320::ZERO)
                    .count() as u32,
            };
            n /= prime.pow(U320::from(shared));
            denominator *= prime.pow(U320::from(e - shared));
        }
        Fraction {
            numerator: n,
            denominator,
        }
    }

    /// Bits of the denominator: more than 64 is common, which is why the text form exists.
    pub fn denominator_bits(&self) -> usize {
        self.denominator.bit_len()
    }

    /// The nearest double, near enough (both parts are rounded once, then divided).
    pub fn value(&self) -> f64 {
        f64::from(&self.numerator) / f64::from(&self.denominator)
    }
}

impl fmt::Display for Fraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.numerator, self.denominator)
    }
}

/// Why a text is not a fraction `n/d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FractionError {
    #[error("there is no '/' between the numerator and the denominator")]
    NoSlash,
    #[error("the numerator is not a decimal number of at most 320 bits")]
    Numerator,
    #[error("the denominator is not a decimal number of at most 320 bits")]
    Denominator,
    #[error("the denominator is 0")]
    ZeroDenominator,
}

impl FromStr for Fraction {
    type Err = FractionError;

    /// Reads `n/d` as [`fmt::Display`] writes it: decimal digits only, `d > 0`. The two parts are
    /// kept as given, not reduced: a patience daemon sends them in lowest terms already (the solver
    /// reduces once, at the end of a search), and reducing them again would cost a 320-bit gcd per
    /// answer for nothing. So a fraction read from text is in lowest terms exactly when the text
    /// was, and compares equal to the solver's only then.
    fn from_str(text: &str) -> Result<Fraction, FractionError> {
        let (numerator, denominator) = text.split_once('/').ok_or(FractionError::NoSlash)?;
        let numerator = decimal(numerator).ok_or(FractionError::Numerator)?;
        let denominator = decimal(denominator).ok_or(FractionError::Denominator)?;
        if denominator == U320::ZERO {
            return Err(FractionError::ZeroDenominator);
        }
        Ok(Fraction {
            numerator,
            denominator,
        })
    }
}

/// A non-empty run of decimal digits. ruint's own parser also skips `_` and reads an empty text
/// as 0, which a fraction's text never has.
fn decimal(text: &str) -> Option<U320> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    U320::from_str_radix(text, 10).ok()
}

/// How many times `p` divides `x` (`x > 0`).
fn valuation(mut x: u64, p: u64) -> u32 {
    let mut v = 0;
    while x != 0 && x.is_multiple_of(p) {
        x /= p;
        v += 1;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_width_holds_a_sure_win_and_no_narrower_one_does() {
        for (p, &width) in WIDTH.iter().enumerate() {
            let most = U320::from(LCM).pow(U320::from(p));
            let bits = most.bit_len().max(1);
            assert_eq!(usize::from(width), bits.div_ceil(64), "{p} pairs");
        }
    }

    #[test]
    fn limb_sums_and_products_agree_with_320_bit_arithmetic() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..10_000 {
            let width = rng.usize(1..=5);
            // Twelve children below 2^(64w) / 16 and a factor up to 27720 / 1: the sum stays
            // below 2^(64w); the product is checked modulo 2^(64w) as the search never needs more.
            let child = |rng: &mut fastrand::Rng| {
                let mut l: Limbs = [0; 5];
                for x in l.iter_mut().take(width) {
                    *x = rng.u64(..);
                }
                l[width - 1] >>= 4;
                l
            };
            let mut sum: Limbs = [0; 5];
            let mut wide = U320::ZERO;
            for _ in 0..rng.usize(1..=12) {
                let x = child(&mut rng);
                add(&mut sum, &x, width);
                wide += U320::from_limbs(x);
            }
            assert_eq!(U320::from_limbs(sum), wide);
            let by = rng.u64(1..=LCM);
            let mask = if width == 5 {
                U320::MAX
            } else {
                (U320::from(1u64) << (64 * width)) - U320::from(1u64)
            };
            assert_eq!(
                U320::from_limbs(scale(&sum, by, width)),
                (wide * U320::from(by)) & mask
            );
        }
    }

    #[test]
    fn fractions_are_reduced_by_every_shared_prime() {
        // 27720 / 27720^1 = 1/1; 13860 / 27720 = 1/2; 0 stays 0/1.
        assert_eq!(
            Fraction::reduced(U320::from(27720u64), 1).to_string(),
            "1/1"
        );
        assert_eq!(
            Fraction::reduced(U320::from(13860u64), 1).to_string(),
            "1/2"
        );
        assert_eq!(Fraction::reduced(U320::ZERO, 3).to_string(), "0/1");
        // 2/3 of 27720^2: 512,265,600 / 768,398,400.
        let two_thirds = U320::from(27720u64 * 27720 / 3 * 2);
        assert_eq!(Fraction::reduced(two_thirds, 2).to_string(), "2/3");
        // 11^18 shares all of 11 with 27720^18, and nothing else.
        let n = U320::from(11u64.pow(18));
        let f = Fraction::reduced(n, 18);
        let d = U320::from(27720u64 / 11).pow(U320::from(18u64));
        assert_eq!(f.to_string(), format!("1/{d}"));
    }

    #[test]
    fn text_reads_back_as_the_same_fraction() {
        for (n, pairs) in [
            (0u64, 3),
            (27720, 1),
            (13860, 1),
            (11u64.pow(18), 18),
            (5, 18),
        ] {
            let f = Fraction::reduced(U320::from(n), pairs);
            assert_eq!(f.to_string().parse::<Fraction>(), Ok(f), "{f}");
        }
        // As given, not reduced.
        assert_eq!(
            "2/4".parse::<Fraction>().map(|f| f.to_string()).as_deref(),
            Ok("2/4")
        );
    }

    #[test]
    fn text_that_is_not_a_fraction_says_which_part_is_wrong() {
        for (text, error) in [
            ("", FractionError::NoSlash),
            ("1", FractionError::NoSlash),
            ("/2", FractionError::Numerator),
            ("-1/2", FractionError::Numerator),
            ("+1/2", FractionError::Numerator),
            ("1_0/20", FractionError::Numerator),
            ("0x1/2", FractionError::Numerator),
            (" 1/2", FractionError::Numerator),
            ("1/", FractionError::Denominator),
            ("1/2/3", FractionError::Denominator),
            ("1/2 ", FractionError::Denominator),
            ("1/0", FractionError::ZeroDenominator),
            ("0/000", FractionError::ZeroDenominator),
        ] {
            assert_eq!(text.parse::<Fraction>(), Err(error), "{text:?}");
        }
        // 10^97 needs 323 bits.
        let huge = format!("1/1{}", "0".repeat(97));
        assert_eq!(huge.parse::<Fraction>(), Err(FractionError::Denominator));
        let fits = format!("1/1{}", "0".repeat(96));
        assert!(fits.parse::<Fraction>().is_ok());
    }
}
