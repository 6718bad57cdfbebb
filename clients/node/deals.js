'use strict';
// Reading UVa deal files as `patience solve` reads them, so that deal N here is its deal N.
//
// The daemon sees one deal at a time, as one line of 36 cards, and cannot tell how the file laid
// it out. So the framing is the client's: which lines make a deal, that each pile line holds four
// cards (joined, a pile of five and one of three would make a valid 36-card deal that `solve`
// rejects), and the line `solve` names in an error. The cards themselves are the daemon's to
// judge; a card is checked here only to know which line `solve` would name if the daemon finds it
// bad. The same rules as clients/python/patience_client/deals.py.

const PILES = 9;
const PILE_HEIGHT = 4;
const CARDS = PILES * PILE_HEIGHT;
// Beyond this a line is not one of a deal file (Rust: lines::MAX_LINE_BYTES).
const MAX_LINE_BYTES = 1 << 20;

// What Rust's `split_whitespace` splits on (Unicode White_Space): JavaScript's `\s` misses U+0085
// and adds U+FEFF, so the set is spelled out.
const TOKEN = /[^\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g;
// A line of only these is blank (Rust: `u8::is_ascii_whitespace`, which leaves out U+000B).
const BLANK = /^[ \t\n\f\r]*$/;
// A card: rank then suit, either case, exactly two characters.
const CARD = /^[6789TJQKAtjqka][SCDHscdh]$/;

/** The input cannot be read as a deal file: what `solve` exits 2 for. */
class DealFileError extends Error {}

const plural = (n) => (n === 1 ? 'card' : 'cards');
const tokensOf = (text) => text.match(TOKEN) || [];

/**
 * Buffers of each line of a byte stream, with its line end, and their numbers (as an editor
 * numbers them), then `{ number: LAST, text: null }` at the end; blank lines are counted, not
 * yielded.
 */
async function* numberedLines(stream, name) {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let number = 0;
  let carry = [];
  let carried = 0;
  const line = (bytes) => {
    number += 1;
    if (bytes.length > MAX_LINE_BYTES) {
      throw new DealFileError(`${name}: line ${number} is longer than ${MAX_LINE_BYTES} bytes: not a text file of deals`);
    }
    if (bytes.includes(0)) {
      throw new DealFileError(`${name}: line ${number} is not text (a NUL byte): not a file of deals`);
    }
    let text;
    try {
      text = utf8.decode(bytes);
    } catch {
      throw new DealFileError(`${name}: line ${number} is not text (bytes that are not UTF-8): not a file of deals`);
    }
    if (number === 1 && text.startsWith('\ufeff')) text = text.slice(1);
    return BLANK.test(text) ? null : { number, text };
  };
  for await (const chunk of stream) {
    let from = 0;
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, from)) {
      const piece = chunk.subarray(from, at + 1);
      const bytes = carried ? Buffer.concat([...carry, piece]) : piece;
      carry = [];
      carried = 0;
      from = at + 1;
      const read = line(bytes);
      if (read) yield read;
    }
    if (from < chunk.length) {
      carry.push(chunk.subarray(from));
      carried += chunk.length - from;
      if (carried > MAX_LINE_BYTES) line(Buffer.concat(carry)); // throws: too long
    }
  }
  if (carried) {
    const read = line(Buffer.concat(carry));
    if (read) yield read;
  }
  yield { number, text: null };
}

/**
 * The deals of a byte stream (a file, standard input), in order; `name` is the file's name in
 * error messages. Each is `{ number, cards, error, line, expect }`: either `cards`, the text to
 * send, or `error`, `solve`'s message for a problem in the framing (the daemon cannot see it) at
 * `line`. For cards sent, `line` is the line `solve` names if the daemon finds the deal bad, and
 * `expect` the error code for which that holds: null for a deal on one line (its line, whatever
 * the error), or ERROR_CODE_BAD_CARD / ERROR_CODE_DUPLICATE_CARD for a deal of nine pile lines in
 * which the client found that problem. Throws DealFileError where `solve` exits 2.
 */
async function* readDeals(stream, name) {
  const lines = numberedLines(stream, name)[Symbol.asyncIterator]();
  let number = 0;
  for (;;) {
    const { value: first, done } = await lines.next();
    if (done || first.text === null) return; // done: the last deal was cut short by the end
    number += 1;
    const tokens = tokensOf(first.text);
    if ((first.text.match(/\//g) || []).length >= 2 || tokens.length === CARDS) {
      // One line: a deal, or a position with "/" between piles. Any error is on this line.
      yield { number, cards: first.text.replace(/\r?\n$/, ''), line: first.number, expect: null };
      continue;
    }
    yield await nineLines(number, first, tokens, lines);
  }
}

/** A deal of nine pile lines, the first read. Every line is consumed, even after a problem. */
async function nineLines(number, first, firstTokens, lines) {
  const piles = [];
  const pileLines = [];
  let problem = null; // { line, error }: the first problem in the framing
  let badCardLine = null; // the first pile line with a token that is not a card
  let at = first.number;
  let tokens = firstTokens;
  for (let pile = 1; pile <= PILES; pile += 1) {
    if (pile > 1) {
      const { value } = await lines.next();
      at = value.number;
      if (value.text === null) {
        if (problem) return { number, ...problem };
        if (badCardLine !== null) break; // the daemon finds the bad card before it counts cards
        const found = piles.reduce((sum, p) => sum + p.length, 0);
        return { number, error: `the deal has ${found} ${plural(found)}; a deal has 36 (9 piles of 4)`, line: at };
      }
      tokens = tokensOf(value.text);
    }
    piles.push(tokens);
    pileLines.push(at);
    if (problem || badCardLine !== null) continue;
    const slashes = tokens.filter((t) => t === '/').length;
    const found = tokens.length - slashes;
    if (slashes) {
      problem = {
        line: at,
        error: `pile ${pile}'s line has a \`/\` beside ${found} ${plural(found)}; a slash separates piles only in a one-line position (nine piles, eight slashes)`,
      };
    } else if (found !== PILE_HEIGHT) {
      problem = { line: at, error: `pile ${pile} has ${found} ${plural(found)}; a pile has 4` };
    } else if (!tokens.every((t) => CARD.test(t))) {
      badCardLine = at;
    }
  }
  if (problem) return { number, ...problem };
  const cards = piles.map((p) => p.join(' ')).join(' ');
  if (badCardLine !== null) return { number, cards, line: badCardLine, expect: 'ERROR_CODE_BAD_CARD' };
  const line = duplicateLine(piles, pileLines);
  return { number, cards, line, expect: line === null ? null : 'ERROR_CODE_DUPLICATE_CARD' };
}

/** The line of the pile where a card is met the second time, piles read in order; or null. */
function duplicateLine(piles, pileLines) {
  const seen = new Set();
  for (let p = 0; p < piles.length; p += 1) {
    for (const card of piles[p]) {
      const key = card.toUpperCase();
      if (seen.has(key)) return pileLines[p];
      seen.add(key);
    }
  }
  return null;
}

module.exports = { readDeals, DealFileError };
