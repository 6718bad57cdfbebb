// Cards, deals, positions and files as `patience solve` reads them, and numbers as it prints
// them. No page here: only what the board and the file view compute themselves.

export const RANKS = "6789TJQKA";
export const SUITS = "SCDH";
const SUIT_SYMBOLS = { S: "\u2660", C: "\u2663", D: "\u2666", H: "\u2665" };
const RANK_NAMES = {
  6: "six", 7: "seven", 8: "eight", 9: "nine", T: "ten",
  J: "jack", Q: "queen", K: "king", A: "ace",
};
const SUIT_NAMES = { S: "spades", C: "clubs", D: "diamonds", H: "hearts" };
const CARD = /^[6-9TJQKA][SCDH]$/;
const PILES = 9;
const HEIGHT = 4;

/** The tokens of a text, split on whitespace as the daemon splits them. */
function tokens(text) {
  const trimmed = text.trim();
  return trimmed === "" ? [] : trimmed.split(/\s+/);
}

/**
 * A deal (36 cards, pile by pile, bottom card first) or a position (nine piles separated by `/`)
 * as nine arrays of card codes, bottom first; null when the text has another shape, or a token
 * that is not a card (the daemon then says what is wrong, in its own words).
 */
export function parsePiles(text) {
  let piles;
  if (text.includes("/")) {
    const groups = text.split("/");
    if (groups.length !== PILES) return null;
    piles = groups.map(tokens);
  } else {
    const cards = tokens(text);
    if (cards.length !== PILES * HEIGHT) return null;
    piles = [];
    for (let p = 0; p < PILES; p++) piles.push(cards.slice(p * HEIGHT, (p + 1) * HEIGHT));
  }
  piles = piles.map((pile) => pile.map((card) => card.toUpperCase()));
  const seen = new Set();
  for (const pile of piles) {
    if (pile.length > HEIGHT) return null;
    for (const card of pile) {
      if (!CARD.test(card) || seen.has(card)) return null;
      seen.add(card);
    }
  }
  return piles;
}

/** Cards left on the table. */
export function cardCount(piles) {
  return piles.reduce((n, pile) => n + pile.length, 0);
}

/** The text the daemon is sent: a full deal on one line, else a position with its slashes. */
export function positionText(piles) {
  if (piles.every((pile) => pile.length === HEIGHT)) return piles.flat().join(" ");
  return piles.map((pile) => pile.join(" ")).join(" / ");
}

/** The `?deal=` value of a board: its cards in input order, with `/` between piles of a position. */
export function urlValue(piles) {
  return positionText(piles).split(/\s+/).filter((t) => t !== "").join("+");
}

/** The position after taking the top cards of piles `a` and `b` (counted from 1). */
export function play(piles, [a, b]) {
  const top = (p) => piles[p - 1][piles[p - 1].length - 1];
  const first = top(a);
  const second = top(b);
  if (!first || !second || a === b || first[0] !== second[0]) {
    throw new Error(`piles ${a} and ${b} have no pair on top`);
  }
  return piles.map((pile, i) => (i === a - 1 || i === b - 1 ? pile.slice(0, -1) : pile));
}

/** A fresh deck, shuffled uniformly (Fisher-Yates on the browser's cryptographic random numbers). */
export function randomDeal() {
  const deck = [];
  for (const suit of SUITS) for (const rank of RANKS) deck.push(rank + suit);
  const word = new Uint32Array(1);
  for (let i = deck.length - 1; i > 0; i--) {
    // Rejection sampling: no bias towards small indices.
    const bound = Math.floor(0x1_0000_0000 / (i + 1)) * (i + 1);
    let r;
    do {
      crypto.getRandomValues(word);
      r = word[0];
    } while (r >= bound);
    const j = r % (i + 1);
    [deck[i], deck[j]] = [deck[j], deck[i]];
  }
  const piles = [];
  for (let p = 0; p < PILES; p++) piles.push(deck.slice(p * HEIGHT, (p + 1) * HEIGHT));
  return piles;
}

export function suitSymbol(card) {
  return SUIT_SYMBOLS[card[1]];
}

export function isRed(card) {
  return card[1] === "D" || card[1] === "H";
}

/** A card in words, for screen readers. */
export function cardName(card) {
  return `${RANK_NAMES[card[0]]} of ${SUIT_NAMES[card[1]]}`;
}

/** A rank as shown: `T` is a ten. */
export function rankShown(rank) {
  return rank === "T" ? "10" : rank;
}

/**
 * `x` with `decimals` decimals, as the daemon and printf print it: the exact binary value rounded
 * half to even. `toFixed` rounds an exact tie (0.0234375 at 6 decimals) up, so ties are found in
 * the exact expansion (`toFixed(100)`, exact for every probability this game has: a tie at d
 * decimals is a double with d + 1 decimals) and rounded to the even neighbour.
 */
export function fixed(x, decimals) {
  const rounded = x.toFixed(decimals);
  if (!Number.isFinite(x) || Math.abs(x) >= 1e21) return rounded;
  const exact = Math.abs(x).toFixed(100);
  const dot = exact.indexOf(".");
  if (!/^50*$/.test(exact.slice(dot + 1 + decimals))) return rounded;
  const down = decimals === 0 ? exact.slice(0, dot) : exact.slice(0, dot + 1 + decimals);
  if (Number(down[down.length - 1]) % 2 === 1) return rounded;
  return (x < 0 ? "-" : "") + down;
}

/** A whole number with thousands separators: 1,000. */
export function count(n) {
  return n.toLocaleString("en-US");
}

/** ASCII whitespace as the daemon splits tokens on it (tab, line feed, vertical tab, form feed, carriage return, space). */
function isSpace(b) {
  return b === 0x20 || (b >= 0x09 && b <= 0x0d);
}

// After nine lines that do not make a deal, the daemon looks this far for where whole deals begin
// again (src/deal/reader.rs: REALIGN_LINES), at lines of at most HELD_LINE_BYTES past the nine.
const REALIGN_LINES = 2 * PILES - 1 + PILES;
const HELD_LINE_BYTES = 1024;
// What Rust's `split_whitespace` splits on (as clients/node/deals.js spells it out).
const TOKEN = /[^\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g;
const PILE_CARD = /^[6789TJQKAtjqka][SCDHscdh]$/;

/**
 * Where each deal of a file starts and ends, framed as the daemon frames them, on the file's
 * bytes: blank lines are skipped; a deal is one line of 36 cards, one line with two or more `/`
 * (a position), or nine non-blank lines; after nine lines that do not make a deal, whole deals
 * begin again where the daemon's reader finds them (docs/solving.md). Returns `{starts, ends,
 * lines}`: byte offsets of each deal, and the (1-based) line it starts on.
 */
export function frameDeals(bytes) {
  const held = nonBlankLines(bytes);
  const starts = [];
  const ends = [];
  const lines = [];
  const text = new TextDecoder("utf-8");
  const piles = (i) => {
    const tokens = text.decode(bytes.subarray(held[i].start, held[i].end)).match(TOKEN) || [];
    return tokens.length === HEIGHT && tokens.every((t) => PILE_CARD.test(t)) ? tokens.map((t) => t.toUpperCase()) : null;
  };
  const reads = (from) => {
    const cards = new Set();
    for (let i = from; i < from + PILES; i++) {
      const pile = piles(i);
      if (pile === null) return false;
      pile.forEach((c) => cards.add(c));
    }
    return cards.size === PILES * HEIGHT;
  };
  const fault = (from) => {
    for (let i = from; i < from + PILES; i++) if (piles(i) === null) return true;
    return false;
  };
  const realign = (at) => {
    let window = held.length - at;
    for (let i = PILES; i < window; i++) {
      if (held[at + i].end - held[at + i].start > HELD_LINE_BYTES) {
        window = i;
        break;
      }
    }
    window = Math.min(window, REALIGN_LINES);
    const nine = (k) => k + PILES <= window;
    if (PILES < window && (held[at + PILES].one || (nine(PILES) && (reads(at + PILES) || fault(at + PILES))))) return null;
    for (const skip of [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17]) {
      if (skip < window && !held[at + skip].one && nine(skip) && reads(at + skip)) return skip;
    }
    return null;
  };
  let i = 0;
  while (i < held.length) {
    let step;
    if (held[i].one) {
      step = 1;
    } else if (held.length - i < PILES || reads(i)) {
      step = Math.min(PILES, held.length - i);
    } else {
      step = realign(i) ?? PILES;
    }
    starts.push(held[i].start);
    lines.push(held[i].line);
    ends.push(held[i + step - 1].end);
    i += step;
  }
  return { starts, ends, lines };
}

/** The non-blank lines of a file: their bytes, their numbers, and whether each is a one-line step. */
function nonBlankLines(bytes) {
  const held = [];
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  let at = bom ? 3 : 0;
  let line = 0;
  while (at < bytes.length) {
    const newline = bytes.indexOf(0x0a, at);
    const end = newline < 0 ? bytes.length : newline + 1;
    line += 1;
    let tokens = 0;
    let slashes = 0;
    let inToken = false;
    // Blank as the daemon has it: spaces, tabs, form feeds and line ends only.
    let blank = true;
    for (let i = at; i < end; i++) {
      const b = bytes[i];
      if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d) blank = false;
      if (b === 0x2f) slashes += 1;
      if (isSpace(b)) {
        inToken = false;
      } else {
        if (!inToken) tokens += 1;
        inToken = true;
      }
    }
    if (!blank) held.push({ start: at, end, line, one: slashes >= 2 || tokens === PILES * HEIGHT });
    at = end;
  }
  return held;
}
