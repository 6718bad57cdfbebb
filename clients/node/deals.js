'use strict';
// Reading UVa deal files as `patience solve` reads them, so that deal N here is its deal N.
//
// The daemon sees one deal at a time, as one line of 36 cards, and cannot tell how the file laid
// it out. So the framing is the client's: which lines make a deal, that each pile line holds four
// cards (joined, a pile of five and one of three would make a valid 36-card deal that `solve`
// rejects), and the line `solve` names in an error. The cards themselves are the daemon's to
// judge; a card is checked here only to know which line `solve` would name if the daemon finds it
// bad, and to find where whole deals begin again after nine lines that do not make one (a line
// missing, extra or stray), by the rule of `solve`'s reader (src/deal/reader.rs,
// docs/solving.md). The same rules as clients/python/patience_client/deals.py.

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

// How far past a damaged deal's first line whole deals are looked for (Rust: REALIGN_LINES), and
// the longest line looked at past its nine (HELD_LINE_BYTES, its line end included).
const REALIGN_LINES = 2 * PILES - 1 + PILES;
const HELD_LINE_BYTES = 1024;

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
  const source = numberedLines(stream, name)[Symbol.asyncIterator]();
  const held = []; // { number, text } of lines read ahead, not yet taken
  let end = null; // the last line's number, once the input has ended
  const fill = async (n) => {
    while (held.length < n && end === null) {
      const { value, done } = await source.next();
      if (done) break;
      if (value.text === null) end = value.number;
      else held.push(value);
    }
    return Math.min(n, held.length);
  };
  let number = 0;
  while (await fill(1)) {
    number += 1;
    const first = held[0];
    const tokens = tokensOf(first.text);
    if (oneLine(first.text)) {
      held.shift();
      // One line: a deal, or a position with "/" between piles. Any error is on this line.
      yield { number, cards: first.text.replace(/\r?\n$/, ''), line: first.number, expect: null };
      continue;
    }
    const count = await fill(PILES);
    const frame = held.slice(0, count);
    const rest = [...frame.slice(1), { number: end, text: null }];
    const deal = nineLines(number, first, tokens, rest[Symbol.iterator]());
    if (count < PILES || reads(frame)) {
      held.splice(0, count);
      yield deal;
      continue;
    }
    await fill(REALIGN_LINES);
    const skip = realign(held);
    if (skip === null) {
      held.splice(0, PILES);
    } else {
      deal.skipped = { first: first.number, last: held[skip - 1].number, next: held[skip].number };
      held.splice(0, skip);
    }
    yield deal;
  }
}

/** Whether a line is a step of its own: a deal or position written on one line. */
const oneLine = (text) => (text.match(/\//g) || []).length >= 2 || tokensOf(text).length === CARDS;

/** The cards of a pile line that holds four cards, upper case; null for any other line. */
function pileCards(text) {
  const tokens = tokensOf(text);
  if (tokens.length !== PILE_HEIGHT || !tokens.every((t) => CARD.test(t))) return null;
  return tokens.map((t) => t.toUpperCase());
}

/** Whether nine pile lines make a deal: four cards each, 36 different. */
function reads(frame) {
  const piles = frame.map((l) => pileCards(l.text));
  return piles.every((p) => p !== null) && new Set(piles.flat()).size === CARDS;
}

/** Whether nine lines look framed: they make a deal, or fail on a line of their own. */
const framed = (frame) => reads(frame) || frame.some((l) => pileCards(l.text) === null);

/**
 * After nine lines that do not make a deal, where whole deals begin again: null when the next
 * nine look framed (or none reads within the look-ahead), else the lines to skip.
 */
function realign(held) {
  let window = held.length;
  for (let i = PILES; i < held.length; i += 1) {
    if (Buffer.byteLength(held[i].text) > HELD_LINE_BYTES) {
      window = i;
      break;
    }
  }
  window = Math.min(window, REALIGN_LINES);
  const nine = (at) => (at + PILES <= window ? held.slice(at, at + PILES) : null);
  if (PILES < window && (oneLine(held[PILES].text) || (nine(PILES) && framed(nine(PILES))))) return null;
  for (const skip of [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17]) {
    if (skip < window && !oneLine(held[skip].text) && nine(skip) && reads(nine(skip))) return skip;
  }
  return null;
}

/**
 * `solve`'s message and line for a deal's error (the client's or the daemon's, named at `line`):
 * as it is, or for a run of lines skipped to where whole deals begin again, the lines and why.
 */
function said(deal, error, line) {
  if (!deal.skipped) return { error, line };
  const { first, last, next } = deal.skipped;
  const lines = last === first ? `line ${first} does not read as a deal` : `lines ${first}-${last} do not read as whole deals`;
  return {
    error: `${lines} (nine lines from line ${first}: ${error}); skipped, and whole deals begin again at line ${next}`,
    line: first,
  };
}

/** A deal of nine pile lines, the first read, the rest from `lines` (then `{ text: null }`). */
function nineLines(number, first, firstTokens, lines) {
  const piles = [];
  const pileLines = [];
  let problem = null; // { line, error }: the first problem in the framing
  let badCardLine = null; // the first pile line with a token that is not a card
  let at = first.number;
  let tokens = firstTokens;
  for (let pile = 1; pile <= PILES; pile += 1) {
    if (pile > 1) {
      const { value } = lines.next();
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

module.exports = { readDeals, said, DealFileError };
