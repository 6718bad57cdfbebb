// The page: its three views (one deal, a file, FZU 2145), the keys, the token the daemon may
// ask for, and the rock-paper-scissors form.

import { ApiError, objects, post, setToken } from "./api.js";
import * as board from "./board.js";
import { fixed } from "./cards.js";
import { initFile } from "./file.js";

const $ = (id) => document.getElementById(id);
const VIEWS = ["board", "file", "rps"];
const SAMPLE = "AS 9S 6C KS JC QH AC KH 7S QD JD KD QS TS JS 9H 6D TD AD 8S QC TH KC 8D 8C 9D TC 7C 9C 7H JH 7D 8H 6S AH 6H";

/** What to do again once the user has given the token the daemon asked for. */
let retry = null;

/** A 401: ask for the token, then retry what was refused. */
function refused(error, again) {
  retry = again;
  $("token-why").textContent = `${error.message} Enter the daemon's token to go on.`;
  $("token-form").hidden = false;
  $("token-input").focus();
}

function view() {
  const name = location.hash.slice(1);
  return VIEWS.includes(name) ? name : "board";
}

function showView() {
  const current = view();
  for (const name of VIEWS) {
    $(`view-${name}`).hidden = name !== current;
    const tab = $(`tab-${name}`);
    if (name === current) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
}

function typing(target) {
  return target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target?.isContentEditable;
}

function keys(event) {
  if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
  if (view() === "board" && board.key(event)) event.preventDefault();
}

// FZU 2145: one case, built into a one-case file for /v1/rps.

const GESTURES = ["rock", "paper", "scissors"];
const DEFAULTS = [["0.500", "0.250", "0.250"]];

function rpsRows() {
  const n = Math.max(0, Math.min(15, Math.trunc(Number($("rps-n").value) || 0)));
  const body = $("rps-players").tBodies[0];
  const rows = [...body.rows];
  while (rows.length > n + 1) rows.pop().remove();
  for (let i = rows.length; i <= n; i++) {
    const tr = document.createElement("tr");
    const name = document.createElement("th");
    name.scope = "row";
    name.textContent = i === 0 ? "Maze" : `player ${i}`;
    tr.append(name);
    GESTURES.forEach((gesture, g) => {
      const td = document.createElement("td");
      const input = document.createElement("input");
      // No min or max: the daemon checks the case and says what is wrong in its own words.
      input.type = "number";
      input.step = "any";
      input.value = (DEFAULTS[i] ?? ["0.334", "0.333", "0.333"])[g];
      input.dataset.player = String(i);
      input.dataset.gesture = gesture;
      input.setAttribute("aria-label", `${i === 0 ? "Maze" : `player ${i}`}: ${gesture}`);
      td.append(input);
      tr.append(td);
    });
    body.append(tr);
    rows.push(tr);
  }
}

async function solveRps(event) {
  event?.preventDefault();
  const rows = [...$("rps-players").tBodies[0].rows];
  const lines = rows.map((tr) => [...tr.querySelectorAll("input")].map((input) => input.value.trim() || "?").join(" "));
  const text = `1\n${rows.length - 1}\n${lines.join("\n")}\n`;
  $("rps-error").hidden = true;
  try {
    const response = await post("/v1/rps?format=json", text);
    let answer = null;
    for await (const [result] of objects(response)) answer ??= result;
    if (answer === null) throw new ApiError("The daemon gave no answer for the case.");
    if (answer.error !== undefined) throw new ApiError(`The daemon says: ${answer.error}`);
    $("rps-probability").textContent = fixed(answer.probability, 10);
    $("rps-answer").hidden = false;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) refused(e, () => solveRps());
    $("rps-error").textContent = e.message;
    $("rps-error").hidden = false;
    $("rps-answer").hidden = true;
  }
}

function start() {
  board.initBoard({ refused });
  initFile({
    refused,
    open: (text) => {
      location.hash = "board";
      board.openText(text);
    },
  });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setToken($("token-input").value.trim());
    $("token-input").value = "";
    $("token-form").hidden = true;
    const again = retry;
    retry = null;
    again?.();
  });
  $("rps-n").addEventListener("input", rpsRows);
  $("rps-form").addEventListener("submit", solveRps);
  rpsRows();
  window.addEventListener("hashchange", showView);
  document.addEventListener("keydown", keys);
  showView();
  const deal = new URLSearchParams(location.search).get("deal");
  board.openText(deal ?? SAMPLE);
}

start();
