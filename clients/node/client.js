'use strict';
// `solveFile`: deal files streamed through `patience.v1.Solver/SolveStream`, the answers in order.
//
// What a caller would otherwise write around grpc-js: addresses with or without TLS, a bearer
// token, a deadline for the whole run, gzip, and failover. A call that fails with a status worth
// retrying elsewhere (the daemon is down, draining or cut its stream, or refused the call for
// load) goes on at the next address, resending the deals that got no Result: the Results before
// the index the daemon names in its `resume_index` detail were received, in order, and nothing is
// printed twice or lost. Which statuses those are is decided from the `ErrorInfo` reason of the
// status details (`google.rpc.Status` in `grpc-status-details-bin`), never from the message text.
// The same behaviour as clients/python/patience_client/client.py.

const fs = require('node:fs');
const path = require('node:path');
const { once } = require('node:events');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');
const { readDeals, said, DealFileError } = require('./deals');
const { toFixedEven } = require('./fixed');

const DEFAULT_ADDR = 'http://127.0.0.1:50051';
const DOMAIN = 'patience.v1';
// Refusals for load: another replica (or the same one later) may take the call.
const LOAD_REASONS = new Set(['MAX_OPEN_STREAMS', 'MAX_DEALS_IN_FLIGHT', 'STALL_TIMEOUT']);
// Rounds over every address, each call failing without an answer, before the run gives up.
const ROUNDS = 2;
const PROTO_DIR = process.env.PATIENCE_PROTO_DIR || path.join(__dirname, '..', '..', 'proto');

let solverService = null;
/** The Solver service, loaded from proto/ on first use (no generated code). */
function Solver() {
  if (solverService === null) {
    const definition = protoLoader.loadSync('patience/v1/patience.proto', {
      includeDirs: [PROTO_DIR],
      longs: Number,
      enums: String,
      defaults: false,
      oneofs: true,
    });
    solverService = grpc.loadPackageDefinition(definition).patience.v1.Solver;
  }
  return solverService;
}

// google.rpc.Status and the details the daemon sends, by their field numbers (the googleapis
// protos are not in proto/; Any and Duration are google.protobuf's, named here to stay local).
const details = protobuf.parse(`
  syntax = "proto3";
  package google.rpc;
  message Status { int32 code = 1; string message = 2; repeated Any details = 3; }
  message Any { string type_url = 1; bytes value = 2; }
  message ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }
  message RetryInfo { Duration retry_delay = 1; }
  message Duration { int64 seconds = 1; int32 nanos = 2; }
`, { keepCase: true }).root;
const StatusDetails = details.lookupType('google.rpc.Status');
const ErrorInfo = details.lookupType('google.rpc.ErrorInfo');
const RetryInfo = details.lookupType('google.rpc.RetryInfo');

/** A call that ended with an error status: where, its code, the ErrorInfo reason, the message. */
class RpcFailure extends Error {
  constructor(addr, code, message, reason = null, metadata = {}, retryDelay = null) {
    super(message);
    this.addr = addr;
    this.code = code;
    this.reason = reason;
    this.metadata = metadata;
    this.retryDelay = retryDelay;
  }

  static fromError(addr, error) {
    const code = typeof error.code === 'number' ? error.code : grpc.status.UNKNOWN;
    let reason = null;
    let metadata = {};
    let retryDelay = null;
    const bin = error.metadata ? error.metadata.get('grpc-status-details-bin')[0] : undefined;
    try {
      for (const any of bin ? StatusDetails.decode(bin).details : []) {
        const type = any.type_url.slice(any.type_url.lastIndexOf('/') + 1);
        if (type === 'google.rpc.ErrorInfo') {
          const info = ErrorInfo.decode(any.value);
          if (info.domain === DOMAIN) {
            reason = info.reason;
            metadata = { ...info.metadata };
          }
        } else if (type === 'google.rpc.RetryInfo') {
          const delay = RetryInfo.decode(any.value).retry_delay;
          if (delay) retryDelay = Number(delay.seconds || 0) + (delay.nanos || 0) / 1e9;
        }
      }
    } catch {
      // Details that do not decode say nothing more: the code and the message remain.
    }
    return new RpcFailure(addr, code, error.details || error.message, reason, metadata, retryDelay);
  }

  get codeName() {
    return Object.keys(grpc.status).find((name) => grpc.status[name] === this.code) || String(this.code);
  }

  /** Whether another address (or this one later) may take the rest of the deals. */
  get retryable() {
    if (this.code === grpc.status.UNAVAILABLE) return true;
    return this.code === grpc.status.RESOURCE_EXHAUSTED && LOAD_REASONS.has(this.reason);
  }

  toString() {
    return `${this.addr}: ${this.codeName}${this.reason ? ` (${this.reason})` : ''}: ${this.message}`;
  }
}

/** One deal's answer; `text()` is the line `patience solve` prints for it. */
class Answer {
  constructor(file, deal, { probability = null, error = null, errorLine = null } = {}) {
    this.file = file;
    this.deal = deal;
    this.probability = probability;
    this.error = error;
    this.errorLine = errorLine;
  }

  text(precision = 6) {
    if (this.error === null) return toFixedEven(this.probability, precision);
    // Standard input is named by nothing, as `solve` names it.
    const name = this.file === '-' ? '' : `${this.file}: `;
    const where = this.errorLine !== null ? ` (line ${this.errorLine})` : '';
    return `error: ${name}deal ${this.deal}${where}: ${this.error}`;
  }
}

/** The deals of one file ("-": standard input). */
async function* readFile(file) {
  if (file === '-') {
    yield* readDeals(process.stdin, '-');
    return;
  }
  let handle;
  try {
    handle = await fs.promises.open(file, 'r');
  } catch (e) {
    throw new DealFileError(`cannot open ${file}: ${e.code === 'ENOENT' ? 'No such file or directory' : e.message}`);
  }
  const stream = handle.createReadStream();
  try {
    yield* readDeals(stream, file);
  } finally {
    stream.destroy();
  }
}

/** The deals read and not yet answered. A new call resends them from the first, then reads on. */
class Outbox {
  constructor(files) {
    this.files = files[Symbol.iterator]();
    this.deals = null;
    this.file = null;
    this.pending = []; // { file, deal }, sent or about to be, without an answer
    this.answered = 0; // deals answered so far, over the whole run
    this.readError = null;
    this.exhausted = false;
    this.reading = Promise.resolve();
  }

  async readOne() {
    while (!this.exhausted) {
      try {
        if (this.deals !== null) {
          const { value, done } = await this.deals.next();
          if (!done) {
            this.pending.push({ file: this.file, deal: value });
            return;
          }
        }
        const next = this.files.next();
        if (next.done) {
          this.exhausted = true;
          return;
        }
        this.file = next.value;
        this.deals = readFile(this.file);
      } catch (e) {
        this.readError = e instanceof DealFileError ? e : new DealFileError(`${this.file}: read failed: ${e.message}`);
        this.exhausted = true;
      }
    }
  }

  /** The deal at `position` of the run (deals the framing found bad counted), or null. */
  async take(position) {
    for (;;) {
      const offset = position - this.answered;
      if (offset < 0) return null; // the writer of a call that ended and was resent
      if (offset < this.pending.length) return this.pending[offset];
      if (this.exhausted) return null;
      // One read at a time, in order, whoever asks.
      this.reading = this.reading.then(() => this.readOne());
      await this.reading;
    }
  }

  answer() {
    this.answered += 1;
    return this.pending.shift();
  }

  done() {
    return this.exhausted && this.pending.length === 0;
  }
}

function channelFor(addr, { tlsCa, tlsCert, tlsKey, gzip }) {
  let target = addr;
  let secure = Boolean(tlsCa);
  for (const [scheme, tls] of [['http://', false], ['https://', true]]) {
    if (addr.startsWith(scheme)) {
      target = addr.slice(scheme.length);
      secure = tls;
    }
  }
  const credentials = secure
    ? grpc.credentials.createSsl(
        tlsCa ? fs.readFileSync(tlsCa) : null,
        tlsKey ? fs.readFileSync(tlsKey) : null,
        tlsCert ? fs.readFileSync(tlsCert) : null,
      )
    : grpc.credentials.createInsecure();
  const options = { 'grpc.max_receive_message_length': -1 };
  if (gzip) options['grpc.default_compression_algorithm'] = 2; // gzip
  const SolverClient = Solver();
  return new SolverClient(target, credentials, options);
}

/** Writes SolveRequests of up to `batch` deals from the deal at `start` of the run on. */
async function writeRequests(call, outbox, start, batch, signal) {
  let position = start;
  let deals = [];
  const send = async () => {
    const request = { deals };
    deals = [];
    if (!call.write(request)) await once(call, 'drain', { signal });
  };
  for (;;) {
    const item = await outbox.take(position);
    if (signal.aborted) return;
    if (item === null) break;
    position += 1;
    if (item.deal.cards === undefined || item.deal.cards === null) continue;
    deals.push({ cards: item.deal.cards });
    if (deals.length === batch) await send();
  }
  if (deals.length) await send();
  call.end();
}

function* localAnswers(outbox) {
  while (outbox.pending.length && outbox.pending[0].deal.cards == null && outbox.pending[0].deal.error != null) {
    const { file, deal } = outbox.answer();
    const { error, line } = said(deal, deal.error, deal.line);
    yield new Answer(file, deal.number, { error, errorLine: line });
  }
}

function answerFor({ file, deal }, result) {
  if (result.outcome === 'probability') return new Answer(file, deal.number, { probability: result.probability });
  const code = result.error.code;
  const named = deal.expect === null || deal.expect === code ? deal.line : null;
  const { error, line } = said(deal, result.error.message, named);
  return new Answer(file, deal.number, { error, errorLine: line });
}

/**
 * Yields an Answer per deal of `files` (a path or an array; "-" is standard input), in order,
 * solved by the daemons at `addrs` (tried in turn).
 *
 * Options: `token` (sent as `authorization: Bearer <token>`), `tlsCa` (and `tlsCert`/`tlsKey`
 * for mutual TLS), PEM file paths; `deadline`, seconds for the whole run; `batch` (256) deals per
 * request; `gzip` (true) compresses requests, and the daemon compresses its answers for clients
 * that accept gzip, as this one does; `onFailover(failure, nextAddr)`, called before a failed call
 * goes on at the next address.
 *
 * After a status worth retrying (UNAVAILABLE, or a refusal for load) the deals without a Result are
 * resent to the next address; after a whole round of addresses failing without an answer it waits
 * the daemon's RetryInfo delay (if any). Throws RpcFailure when the run cannot go on (a status not
 * worth retrying, or two rounds without an answer, one if no daemon has answered yet in the run),
 * and DealFileError when a file cannot be read; in both cases after yielding every answer received
 * before.
 */
async function* solveFile(files, addrs = DEFAULT_ADDR, options = {}) {
  const { token = null, deadline = null, batch = 256, onFailover = null } = options;
  const channelOptions = { gzip: true, ...options };
  files = typeof files === 'string' ? [files] : [...files];
  addrs = typeof addrs === 'string' ? [addrs] : [...addrs];
  if (!addrs.length) throw new Error('no address given');
  const deadlineAt = deadline === null ? null : Date.now() + deadline * 1000;
  const outbox = new Outbox(files);
  const clients = new Map();
  let turn = 0;
  let failedInARow = 0;
  let everAnswered = false;
  try {
    for (;;) {
      yield* localAnswers(outbox);
      if (outbox.done()) break;
      const addr = addrs[turn % addrs.length];
      if (!clients.has(addr)) clients.set(addr, channelFor(addr, channelOptions));
      if (deadlineAt !== null && Date.now() >= deadlineAt) {
        // No call is started once the run's time is up: a call with no time left races its own
        // deadline against whatever the daemon answers first.
        throw new RpcFailure(addr, grpc.status.DEADLINE_EXCEEDED, "the run's deadline passed before a call could start");
      }
      const metadata = new grpc.Metadata();
      if (token !== null) metadata.set('authorization', `Bearer ${token}`);
      const call = clients.get(addr).SolveStream(metadata, deadlineAt === null ? {} : { deadline: deadlineAt });
      const start = outbox.answered;
      const writing = new AbortController();
      const writer = writeRequests(call, outbox, start, batch, writing.signal).catch(() => {});
      let received = 0;
      try {
        for await (const response of call) {
          for (const result of response.results || []) {
            if (Number(result.index || 0) !== received) {
              throw new RpcFailure(addr, grpc.status.INTERNAL, `result ${result.index} came where ${received} was due`);
            }
            received += 1;
            yield* localAnswers(outbox);
            yield answerFor(outbox.answer(), result);
            yield* localAnswers(outbox);
          }
        }
        await writer;
      } catch (e) {
        writing.abort();
        call.cancel();
        if (e instanceof RpcFailure || typeof e.code !== 'number') throw e;
        const failure = RpcFailure.fromError(addr, e);
        failedInARow = received ? 0 : failedInARow + 1;
        everAnswered = everAnswered || received > 0;
        // A run no daemon ever answered stops after one round: a wrong address or a daemon not
        // started is not worth waiting for.
        const rounds = everAnswered ? ROUNDS : 1;
        if (!failure.retryable || failedInARow >= rounds * addrs.length) throw failure;
        turn += 1;
        if (onFailover) onFailover(failure, addrs[turn % addrs.length]);
        if (failedInARow >= addrs.length && turn % addrs.length === 0 && failure.retryDelay) {
          // A whole round without an answer: wait as the daemon asked before the next.
          let ms = failure.retryDelay * 1000;
          if (deadlineAt !== null) ms = Math.max(0, Math.min(ms, deadlineAt - Date.now()));
          await new Promise((resolve) => setTimeout(resolve, ms));
        }
      }
    }
    if (outbox.readError) throw outbox.readError;
  } finally {
    for (const client of clients.values()) client.close();
  }
}

module.exports = { solveFile, Answer, RpcFailure, DealFileError, DEFAULT_ADDR };
