'use strict';
// A double printed with a fixed number of decimals as `patience solve` prints it (Rust's `{:.N}`,
// C's printf `%.Nf`): the double's exact binary value rounded half to even. JavaScript's
// `toFixed` rounds an exact tie up instead (0.0078125, which is 1/128, gives "0.007813" where
// `solve` prints "0.007812"), so it cannot be used for output that must match byte for byte.

const MANTISSA_BITS = 52n;

/**
 * The exact value of a finite double as `mantissa * 2 ** exponent`, with mantissa a
 * non-negative BigInt; the sign apart.
 */
function decompose(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> MANTISSA_BITS) & 0x7ffn);
  const fraction = bits & ((1n << MANTISSA_BITS) - 1n);
  if (biased === 0) {
    return { negative: bits >> 63n === 1n, mantissa: fraction, exponent: -1074 };
  }
  return { negative: bits >> 63n === 1n, mantissa: fraction | (1n << MANTISSA_BITS), exponent: biased - 1075 };
}

/**
 * `x` with `digits` decimals, rounded half to even on its exact value, as Rust's `format!("{:.6}")`
 * and C's `printf("%.6f")` print it (NaN and infinities as Rust prints them).
 */
function toFixedEven(x, digits) {
  if (!Number.isInteger(digits) || digits < 0) {
    throw new RangeError(`digits must be a non-negative integer, not ${digits}`);
  }
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const { negative, mantissa, exponent } = decompose(x);
  const scale = 10n ** BigInt(digits);
  // n: the value times 10^digits, rounded to an integer, half to even.
  let n;
  if (exponent >= 0) {
    n = (mantissa << BigInt(exponent)) * scale;
  } else {
    const numerator = mantissa * scale;
    const denominator = 1n << BigInt(-exponent);
    n = numerator / denominator;
    const twice = 2n * (numerator % denominator);
    if (twice > denominator || (twice === denominator && n % 2n === 1n)) n += 1n;
  }
  let text = n.toString();
  if (digits > 0) {
    text = text.padStart(digits + 1, '0');
    text = `${text.slice(0, -digits)}.${text.slice(-digits)}`;
  }
  return negative ? `-${text}` : text;
}

module.exports = { toFixedEven, decompose };
