// One deal: the nine piles, the probability, every move's odds, the likeliest winning line; moves
// played on the page (which computes the position each leads to and asks the daemon about it),
// undone, and the board kept in the URL.

import { ApiError, objects, post } from "./api.js";
import * as cards from "./cards.js";

const $ = (id) => document.getElementById(id);
const SOLVE = "/v1/solve?format=json&exact&moves&line";

/** The board shown: its piles and the daemon's analysis of them. */
let current = null;
/** The boards before each move played, and the move: what undo goes back to. */
const played = [];
/** Analyses already asked for, by position text: undo and replays cost no call. */
const known = new Map();
/** The call in flight, aborted when another board is asked for. */
let asking = null;
let onRefused = () => {};

export function initBoard({ refused }) {
  onRefused = refused;
  $("deal-form").addEventListener("submit", (event) => {
    event.preventDefault();
    openText($("deal-input").value);
  });
  $("deal-input").addEventListener("keydown", (event) => {
    // Enter solves; Shift+Enter is a new line (a deal may be nine).
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      openText($("deal-input").value);
    }
  });
  $("random").addEventListener("click", random);
  $("undo").addEventListener("click", undo);
  $("step").addEventListener("click", step);
}

/** A new board from a deal's or position's text (pasted, in the URL, or a file's row). */
export function openText(text) {
  played.length = 0;
  const piles = cards.parsePiles(text);
  $("deal-input").value = piles ? cards.positionText(piles) : text.trim();
  show(piles, text);
}

export function random() {
  openText(cards.positionText(cards.randomDeal()));
}

/** The board's keys: digits play moves, U and Backspace undo, N steps along the line, R deals. */
export function key(event) {
  if (/^[1-9]$/.test(event.key)) {
    const move = current?.result?.moves?.[Number(event.key) - 1];
    if (move) playMove(move.piles);
    return Boolean(move);
  }
  switch (event.key.toLowerCase()) {
    case "u":
    case "backspace":
      undo();
      return true;
    case "n":
      step();
      return true;
    case "r":
      random();
      return true;
    default:
      return false;
  }
}

function playMove(piles) {
  if (!current?.piles) return;
  const next = cards.play(current.piles, piles);
  played.push({ board: current, move: piles });
  show(next);
}

function undo() {
  const last = played.pop();
  if (!last) return;
  show(last.board.piles);
}

function step() {
  const first = current?.result?.line?.[0];
  if (first) playMove(first.piles);
}

/** Asks for the analysis of `piles` (or of `text` when the page cannot read it) and shows it. */
async function show(piles, text) {
  asking?.abort();
  const body = piles ? cards.positionText(piles) : text;
  const error = $("board-error");
  error.hidden = true;
  if (piles) {
    history.replaceState(null, "", `?deal=${cards.urlValue(piles)}${location.hash}`);
    $("deal-input").value = body;
  }
  let result = piles && known.get(body);
  if (!result) {
    const controller = new AbortController();
    asking = controller;
    $("board-busy").hidden = false;
    try {
      result = await analyse(body, controller.signal);
    } catch (e) {
      if (e.name === "AbortError") return;
      if (e instanceof ApiError && e.status === 401) onRefused(e, () => show(piles, text));
      fail(e.message);
      return;
    } finally {
      if (asking === controller) {
        asking = null;
        $("board-busy").hidden = true;
      }
    }
    if (asking !== null) return;
    if (piles && result.probability !== undefined) known.set(body, result);
  }
  if (result.error !== undefined) {
    fail(`The daemon says: ${result.error}`);
    return;
  }
  if (!piles) {
    // The daemon read it, the page did not: say so rather than draw something else.
    fail("The daemon solved this, but the board cannot draw it: give nine piles of at most four cards.");
    return;
  }
  current = { piles, result };
  render();
}

async function analyse(body, signal) {
  const response = await post(SOLVE, body, signal);
  const results = [];
  for await (const [result] of objects(response)) results.push(result);
  if (results.length === 0) throw new ApiError("There is no deal in that text: paste 36 cards, or a position.");
  if (results.length > 1) {
    throw new ApiError(`That is ${cards.count(results.length)} deals: the board takes one (the file view takes many).`);
  }
  return results[0];
}

function fail(message) {
  const error = $("board-error");
  error.textContent = message;
  error.hidden = false;
  $("board").hidden = true;
}

function render() {
  const { piles, result } = current;
  $("board").hidden = false;
  $("probability").textContent = cards.fixed(result.probability, 6);
  $("probability").dataset.value = String(result.probability);
  $("exact").textContent = result.exact ?? "";
  const left = cards.cardCount(piles);
  let verdict;
  if (left === 0) verdict = "Cleared: the game is won.";
  else if (result.moves.length === 0) verdict = "No pair on top: the game is lost.";
  else if (result.winnable) verdict = "Winnable: a player who chooses well clears the table.";
  else verdict = "Not winnable: no sequence of moves clears the table.";
  $("verdict").textContent = `${verdict} ${cards.count(left)} cards left; ${cards.count(result.states)} positions evaluated.`;
  renderPiles(piles);
  renderMoves(result.moves);
  renderLine(result.line);
  renderPlayed();
  $("undo").disabled = played.length === 0;
  $("step").disabled = !result.line?.length;
}

function cardElement(card, top) {
  const li = document.createElement("li");
  li.className = `card ${cards.isRed(card) ? "red" : "black"}${top ? " top" : ""}`;
  li.dataset.card = card;
  li.setAttribute("aria-label", cards.cardName(card) + (top ? " (top)" : ""));
  const rank = document.createElement("span");
  rank.className = "rank";
  rank.textContent = cards.rankShown(card[0]);
  const suit = document.createElement("span");
  suit.className = "suit";
  suit.textContent = cards.suitSymbol(card);
  li.append(rank, suit);
  return li;
}

function renderPiles(piles) {
  const list = $("piles");
  list.replaceChildren(
    ...piles.map((pile, i) => {
      const li = document.createElement("li");
      li.className = "pile";
      li.dataset.pile = String(i + 1);
      const name = document.createElement("span");
      name.className = "pile-name";
      name.textContent = String(i + 1);
      const stack = document.createElement("ol");
      stack.className = "cards";
      stack.setAttribute("aria-label", `pile ${i + 1}`);
      if (pile.length === 0) {
        const empty = document.createElement("li");
        empty.className = "card empty";
        empty.textContent = "empty";
        stack.append(empty);
      }
      pile.forEach((card, at) => stack.append(cardElement(card, at === pile.length - 1)));
      li.append(name, stack);
      return li;
    }),
  );
}

/** Shows which two piles a move takes from. */
function highlight(piles, on) {
  for (const p of piles) {
    document.querySelector(`#piles .pile[data-pile="${p}"]`)?.classList.toggle("chosen", on);
  }
}

/** A move in words and cards: the two cards it takes, then their piles. */
function moveLabel(piles, move) {
  const [a, b] = move.piles;
  const span = document.createElement("span");
  span.className = "what";
  for (const p of [a, b]) {
    const card = piles[p - 1].at(-1);
    const mini = document.createElement("span");
    mini.className = `mini ${cards.isRed(card) ? "red" : "black"}`;
    mini.textContent = cards.rankShown(card[0]) + cards.suitSymbol(card);
    mini.setAttribute("aria-label", cards.cardName(card));
    span.append(mini);
  }
  const where = document.createElement("span");
  where.className = "where";
  where.textContent = `piles ${a} & ${b}`;
  span.append(where);
  return span;
}

function renderMoves(moves) {
  const best = Math.max(...moves.map((m) => m.probability));
  $("moves").replaceChildren(
    ...moves.map((move, i) => {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "move" + (move.probability === best ? " best" : "");
      button.dataset.piles = move.piles.join(",");
      button.dataset.probability = String(move.probability);
      if (i < 9) button.setAttribute("aria-keyshortcuts", String(i + 1));
      const keyHint = document.createElement("kbd");
      keyHint.textContent = i < 9 ? String(i + 1) : "";
      const what = moveLabel(current.piles, move);
      const odds = document.createElement("span");
      odds.className = "odds";
      odds.textContent = cards.fixed(move.probability, 6);
      const bar = document.createElement("meter");
      bar.min = 0;
      bar.max = 1;
      bar.value = move.probability;
      bar.setAttribute("aria-hidden", "true");
      button.append(keyHint, what, bar, odds);
      if (move.probability === best) {
        const mark = document.createElement("span");
        mark.className = "mark";
        mark.textContent = "best";
        button.append(mark);
      }
      button.addEventListener("click", () => playMove(move.piles));
      for (const [kind, on] of [["mouseenter", true], ["mouseleave", false], ["focus", true], ["blur", false]]) {
        button.addEventListener(kind, () => highlight(move.piles, on));
      }
      li.append(button);
      return li;
    }),
  );
}

function renderLine(line) {
  const list = $("line");
  if (!line?.length) {
    const li = document.createElement("li");
    li.className = "none";
    li.textContent = cards.cardCount(current.piles) === 0 ? "Nothing left to play." : "None: this position cannot be won.";
    list.replaceChildren(li);
    return;
  }
  // The line's cards, found by playing it out from the board.
  let piles = current.piles;
  list.replaceChildren(
    ...line.map((move) => {
      const li = document.createElement("li");
      li.append(moveLabel(piles, move));
      piles = cards.play(piles, move.piles);
      return li;
    }),
  );
}

function renderPlayed() {
  const list = $("played");
  if (played.length === 0) {
    const li = document.createElement("li");
    li.className = "none";
    li.textContent = "Nothing yet.";
    list.replaceChildren(li);
    return;
  }
  list.replaceChildren(
    ...played.map(({ board, move }) => {
      const li = document.createElement("li");
      li.append(moveLabel(board.piles, { piles: move }));
      return li;
    }),
  );
}
