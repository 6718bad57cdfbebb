// A file of deals: sent to the daemon as it is, its answers read as they stream in (a progress
// bar, a histogram, the bad deals with their errors, every row a link to its board), and the
// results downloadable as `patience solve` prints them or as its JSON lines.
//
// A browser sends a request's whole body before it reads any of the answer, and the daemon stops
// reading a body whose answers nobody takes (--max-in-flight, then --stall-timeout). So a file
// goes in parts of PART deals, cut where deals begin, one call after the other; the answers'
// indices and the deal and line numbers in their errors are shifted back to the whole file's,
// which makes the lines the same bytes one call would have answered.

import { ApiError, objects, post } from "./api.js";
import * as cards from "./cards.js";

const $ = (id) => document.getElementById(id);
const BINS = 20;
const PAGE = 500;
/** Deals per call: their answers (~70 bytes each in JSON) fit what the daemon holds by default. */
const PART = 5000;
const SVG = "http://www.w3.org/2000/svg";

/** The file being shown: its name and bytes, its deals' places, and the answers so far. */
let run = null;
let onRefused = () => {};
let onOpen = () => {};

export function initFile({ refused, open }) {
  onRefused = refused;
  onOpen = open;
  const input = $("file-input");
  input.addEventListener("change", () => {
    if (input.files.length > 0) solveFile(input.files[0]);
    input.value = "";
  });
  const drop = $("drop");
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    const file = event.dataTransfer?.files?.[0];
    if (file) solveFile(file);
  });
  $("file-stop").addEventListener("click", () => run?.controller.abort());
  $("download-text").addEventListener("click", () => download("text"));
  $("download-json").addEventListener("click", () => download("json"));
  $("page-previous").addEventListener("click", () => turn(-1));
  $("page-next").addEventListener("click", () => turn(1));
}

async function solveFile(file) {
  run?.controller.abort();
  const bytes = new Uint8Array(await file.arrayBuffer());
  const framed = cards.frameDeals(bytes);
  run = {
    name: file.name,
    bytes,
    framed,
    total: framed.starts.length,
    lines: [],
    results: [],
    bad: [],
    errors: new Map(),
    bins: new Array(BINS).fill(0),
    unwinnable: 0,
    sum: 0,
    page: 0,
    done: false,
    controller: new AbortController(),
  };
  const mine = run;
  $("file-error").hidden = true;
  $("file-results").hidden = false;
  $("file-status").hidden = false;
  $("file-stop").hidden = false;
  $("bad-list").replaceChildren();
  $("file-table").tBodies[0].replaceChildren();
  update();
  try {
    let drawn = performance.now();
    const parts = Math.max(1, Math.ceil(mine.total / PART));
    for (let k = 0; k < parts; k++) {
      const from = k === 0 ? 0 : framed.starts[k * PART];
      const to = (k + 1) * PART < mine.total ? framed.starts[(k + 1) * PART] : bytes.length;
      const shift = { deals: mine.results.length, lines: k === 0 ? 0 : framed.lines[k * PART] - 1 };
      const response = await post("/v1/solve?format=json", file.slice(from, to), mine.controller.signal);
      for await (const [result, line] of objects(response)) {
        if (mine !== run) return;
        add(...shifted(result, line, shift));
        if (performance.now() - drawn > 100) {
          update();
          drawn = performance.now();
          // Let the page draw between batches of lines.
          await new Promise((resolve) => requestAnimationFrame(resolve));
        }
      }
    }
  } catch (e) {
    if (mine !== run) return;
    if (e.name === "AbortError") {
      failed(`Stopped after ${cards.count(mine.results.length)} of ${cards.count(mine.total)} deals.`);
    } else {
      if (e instanceof ApiError && e.status === 401) onRefused(e, () => solveFile(file));
      failed(e.message);
    }
  }
  if (mine !== run) return;
  mine.done = true;
  $("file-stop").hidden = true;
  update();
}

/**
 * A part's answer as the whole file's: its index, the deal its error names, and every line the
 * error names (`(line L)`, and a skipped run's `lines A-B ... line A ... line C`).
 */
function shifted(result, line, { deals, lines }) {
  if (deals === 0 && lines === 0) return [result, line];
  const shiftLines = (text) =>
    text.replace(/\b(lines?) (\d+)(?:-(\d+))?/g, (_, word, from, to) =>
      `${word} ${Number(from) + lines}${to === undefined ? "" : `-${Number(to) + lines}`}`);
  if (typeof result.index === "number") result.index += deals;
  if (result.error !== undefined) {
    result.error = shiftLines(result.error.replace(/^deal (\d+)/, (_, deal) => `deal ${Number(deal) + deals}`));
  }
  let text = line.replace(/^\{"index":\d+/, `{"index":${result.index}`);
  if (result.error !== undefined) {
    text = shiftLines(text.replace(/"error":"deal (\d+)/, (_, deal) => `"error":"deal ${Number(deal) + deals}`));
  }
  return [result, text];
}

function failed(message) {
  $("file-error").textContent = message;
  $("file-error").hidden = false;
}

function add(result, line) {
  const at = run.results.length;
  run.lines.push(line);
  if (result.error !== undefined) {
    run.results.push(null);
    run.bad.push({ index: at, error: result.error });
    run.errors.set(at, result.error);
    const li = document.createElement("li");
    li.dataset.index = String(at);
    li.textContent = result.error;
    $("bad-list").append(li);
  } else {
    const p = result.probability;
    run.results.push(p);
    run.sum += p;
    if (result.winnable === false || p === 0) run.unwinnable += 1;
    else run.bins[Math.min(BINS - 1, Math.floor(p * BINS))] += 1;
  }
  if (at < (run.page + 1) * PAGE && at >= run.page * PAGE) $("file-table").tBodies[0].append(row(at));
}

/** One result's row: a link to its board (opened on this page; a new tab works too). */
function row(at) {
  const tr = document.createElement("tr");
  tr.dataset.index = String(at);
  const p = run.results[at];
  const deal = document.createElement("td");
  const link = document.createElement("a");
  link.textContent = cards.count(at + 1);
  const text = dealText(at);
  const piles = cards.parsePiles(text);
  link.href = piles ? `?deal=${cards.urlValue(piles)}` : "#file";
  deal.append(link);
  const probability = document.createElement("td");
  const note = document.createElement("td");
  if (p === null) {
    probability.textContent = "error";
    note.textContent = run.errors.get(at) ?? "";
    tr.className = "bad";
  } else {
    probability.textContent = cards.fixed(p, 6);
    note.textContent = p === 0 ? "unwinnable" : "";
  }
  tr.append(deal, probability, note);
  tr.tabIndex = 0;
  const open = (event) => {
    // A modified click on the link opens a new tab, as links do.
    if (event.target === link && (event.ctrlKey || event.metaKey || event.shiftKey || event.button === 1)) return;
    event.preventDefault();
    onOpen(text);
  };
  tr.addEventListener("click", open);
  tr.addEventListener("keydown", (event) => {
    if (event.key === "Enter") open(event);
  });
  return tr;
}

function dealText(at) {
  const { starts, ends } = run.framed;
  return at < starts.length ? new TextDecoder().decode(run.bytes.subarray(starts[at], ends[at])) : "";
}

function update() {
  const { results, total, done } = run;
  const solved = results.length - run.bad.length;
  const progress = $("file-progress");
  progress.max = Math.max(total, results.length, 1);
  progress.value = done ? progress.max : results.length;
  $("file-count").textContent = done
    ? `${cards.count(results.length)} of ${cards.count(results.length)} deals: done`
    : `${cards.count(results.length)} of ${cards.count(total)} deals`;
  const mean = solved > 0 ? `; mean probability ${cards.fixed(run.sum / solved, 6)}` : "";
  $("file-summary").textContent =
    `${cards.count(results.length)} results from ${run.name}: ${cards.count(solved)} solved, ` +
    `${cards.count(run.bad.length)} bad; ${cards.count(run.unwinnable)} unwinnable${mean}.`;
  $("bad").hidden = run.bad.length === 0;
  drawHistogram();
  pager();
}

function drawHistogram() {
  const svg = $("histogram");
  const counts = [run.unwinnable, ...run.bins];
  const top = Math.max(1, ...counts);
  const [left, bottom, width, height] = [30, 140, 380, 120];
  const slot = width / counts.length;
  const parts = [];
  const add = (name, attributes, text) => {
    const element = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attributes)) element.setAttribute(k, String(v));
    if (text !== undefined) element.textContent = text;
    parts.push(element);
    return element;
  };
  add("line", { x1: left, y1: bottom, x2: left + width, y2: bottom, class: "axis" });
  counts.forEach((n, i) => {
    const h = (n / top) * height;
    const from = i === 0 ? 0 : (i - 1) / BINS;
    const to = i / BINS;
    const label = i === 0 ? "unwinnable (0)" : `${from.toFixed(2)} to ${to.toFixed(2)}`;
    const bar = add("rect", {
      x: left + i * slot + 1,
      y: bottom - h,
      width: slot - 2,
      height: h,
      class: i === 0 ? "bar zero" : "bar",
      "data-count": n,
      "data-bin": i === 0 ? "zero" : String(i - 1),
    });
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${label}: ${cards.count(n)} deals`;
    bar.append(title);
  });
  for (const [x, text] of [[0, "0"], [1, "0.25"], [2, "0.5"], [3, "0.75"], [4, "1"]]) {
    add("text", { x: left + slot + (x * (width - slot)) / 4, y: bottom + 16, class: "tick" }, text);
  }
  add("text", { x: left + slot / 2, y: bottom + 30, class: "tick" }, "0 exactly");
  add("text", { x: left - 4, y: bottom - height + 4, class: "tick end" }, cards.count(top));
  svg.replaceChildren(...parts);
  $("histogram-caption").textContent =
    `Win probabilities of the ${cards.count(run.results.length - run.bad.length)} solved deals: ` +
    `the first bar is the ${cards.count(run.unwinnable)} unwinnable ones, then bins of 0.05.`;
}

function pager() {
  const pages = Math.max(1, Math.ceil(run.results.length / PAGE));
  const first = run.page * PAGE;
  const last = Math.min(run.results.length, first + PAGE);
  $("page-shown").textContent =
    run.results.length === 0 ? "" : `deals ${cards.count(first + 1)} to ${cards.count(last)} of ${cards.count(run.results.length)}`;
  $("page-previous").disabled = run.page === 0;
  $("page-next").disabled = run.page + 1 >= pages;
}

function turn(by) {
  const pages = Math.max(1, Math.ceil(run.results.length / PAGE));
  run.page = Math.min(pages - 1, Math.max(0, run.page + by));
  const rows = [];
  const last = Math.min(run.results.length, (run.page + 1) * PAGE);
  for (let at = run.page * PAGE; at < last; at++) rows.push(row(at));
  $("file-table").tBodies[0].replaceChildren(...rows);
  pager();
}

/** The results as `patience solve` prints them (`text`), or its `--format json` lines. */
function download(format) {
  if (!run) return;
  let body;
  if (format === "json") {
    body = run.lines.map((line) => `${line}\n`).join("");
  } else {
    const line = (p, at) => (p === null ? `error: ${run.errors.get(at)}` : cards.fixed(p, 6));
    body = run.results.map((p, at) => `${line(p, at)}\n`).join("");
  }
  const blob = new Blob([body], { type: format === "json" ? "application/x-ndjson" : "text/plain" });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  // `.txt`, not `.out`: browsers hold back downloads whose extension names a program.
  link.download = `${run.name.replace(/\.[^.]*$/, "")}.${format === "json" ? "jsonl" : "txt"}`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}
