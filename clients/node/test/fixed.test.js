'use strict';
// `toFixedEven` against values worked out by hand and against an oracle that works in decimal
// digits: a double k / 2^m is exactly k * 5^m / 10^m, so its decimal expansion is finite and can
// be rounded half to even digit by digit, with no division and no binary arithmetic.
//   node --test clients/node/test/

const test = require('node:test');
const assert = require('node:assert/strict');
const { toFixedEven } = require('../fixed');

/** Rounds the exact decimal `digits` (an integer string of the value times 10^m) to `d` decimals. */
function decimalOracle(k, m, d) {
  let text = (BigInt(k) * 5n ** BigInt(m)).toString().padStart(m + 1, '0');
  let whole = text.slice(0, text.length - m);
  let fraction = text.slice(text.length - m).padEnd(d, '0');
  const kept = fraction.slice(0, d);
  const rest = fraction.slice(d);
  let digits = whole + kept;
  const first = rest[0] || '0';
  const beyond = rest.slice(1).replace(/0/g, '');
  const last = Number(digits[digits.length - 1]);
  const up = first > '5' || (first === '5' && (beyond !== '' || last % 2 === 1));
  if (up) digits = (BigInt(digits) + 1n).toString().padStart(digits.length, '0');
  whole = digits.slice(0, digits.length - d) || '0';
  return d ? `${whole}.${digits.slice(digits.length - d)}` : whole;
}

test('ties round to even, where toFixed rounds them up', () => {
  // 1/128 and its odd multiples are the 6-decimal ties among doubles.
  assert.equal(toFixedEven(0.0078125, 6), '0.007812');
  assert.equal((0.0078125).toFixed(6), '0.007813'); // why toFixed will not do
  assert.equal(toFixedEven(0.0234375, 6), '0.023438'); // 3/128: the even neighbour is above
  assert.equal(toFixedEven(0.3203125, 6), '0.320312'); // 41/128, in tests/data/ties.in
  assert.equal(toFixedEven(0.5546875, 6), '0.554688'); // 71/128
  assert.equal(toFixedEven(0.5, 0), '0');
  assert.equal(toFixedEven(1.5, 0), '2');
  assert.equal(toFixedEven(2.5, 0), '2');
  assert.equal(toFixedEven(0.125, 2), '0.12');
  assert.equal(toFixedEven(0.375, 2), '0.38');
});

test('a value a hair off a tie rounds to the nearest', () => {
  const tie = 0.0078125;
  const above = tie + Number.EPSILON / 64; // the next double up (tie is 2^-7; its ulp is 2^-59)
  const below = tie - Number.EPSILON / 128;
  assert.ok(above > tie && below < tie);
  assert.equal(toFixedEven(above, 6), '0.007813');
  assert.equal(toFixedEven(below, 6), '0.007812');
});

test('a decimal that is not a double is rounded from the double', () => {
  // 0.3171875 is a tie in decimal, but the nearest double is above it (tests/data/ties.in).
  assert.equal(toFixedEven(0.3171875, 6), '0.317188');
  // 0.1 is 0.1000000000000000055511151231257827...
  assert.equal(toFixedEven(0.1, 20), '0.10000000000000000555');
  assert.equal(toFixedEven(0.1, 1), '0.1');
});

test('the edges: 0, 1, the smallest and largest doubles, signs, NaN', () => {
  assert.equal(toFixedEven(0, 6), '0.000000');
  assert.equal(toFixedEven(1, 6), '1.000000');
  assert.equal(toFixedEven(5e-324, 6), '0.000000');
  assert.equal(toFixedEven(5e-324, 330).slice(0, 6), '0.0000');
  assert.equal(toFixedEven(Number.MAX_VALUE, 0), BigInt(Number.MAX_VALUE).toString());
  assert.equal(toFixedEven(-0.0078125, 6), '-0.007812');
  assert.equal(toFixedEven(-0, 6), '-0.000000'); // as Rust and printf print it
  assert.equal(toFixedEven(123.456, 0), '123');
  assert.equal(toFixedEven(NaN, 6), 'NaN');
  assert.equal(toFixedEven(Infinity, 6), 'inf');
  assert.throws(() => toFixedEven(0.5, -1), RangeError);
});

test('agrees with the decimal oracle on dyadic values, ties included', () => {
  // A fixed generator, so a failure can be replayed.
  let seed = 0x9e3779b9;
  const next = () => {
    seed ^= seed << 13; seed >>>= 0;
    seed ^= seed >>> 17;
    seed ^= seed << 5; seed >>>= 0;
    return seed;
  };
  let ties = 0;
  for (let i = 0; i < 20000; i += 1) {
    const m = next() % 31;
    const k = next() % (2 ** Math.min(m + 1, 31)); // values in [0, 2)
    const d = next() % 12;
    const x = k / 2 ** m;
    const expected = decimalOracle(k, m, d);
    assert.equal(toFixedEven(x, d), expected, `${k}/2^${m} to ${d} decimals`);
    if (m > d && expected !== x.toFixed(d)) ties += 1;
  }
  // The sample holds ties that toFixed gets wrong: the test can tell the two rules apart.
  assert.ok(ties > 100, `only ${ties} ties`);
});

test('agrees with toFixed away from ties', () => {
  // toFixed is exact on a double's value except that it rounds ties up; random doubles in [0, 1)
  // are never ties at these precisions.
  let seed = 12345;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  for (let i = 0; i < 20000; i += 1) {
    const x = next() * next();
    const d = 1 + (i % 17);
    assert.equal(toFixedEven(x, d), x.toFixed(d), `${x} to ${d} decimals`);
  }
});
