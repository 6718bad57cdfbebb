#!/usr/bin/env node
'use strict';
// patience-node: stream UVa deal files to patience daemons and print what `patience solve` prints.
//
//   node clients/node/patience.js [--addr ADDR]... [--tls-ca PEM] [--auth-token-file FILE]
//                                 [--deadline SECONDS] [FILE]...
//
// One line per deal on standard output (the probability with --precision decimals, rounded half
// to even as `solve` rounds it, or an `error:` line), then the exit status: 0 when every deal was
// answered, 1 when some deal was bad, 2 when the run failed (a daemon's status, a file that cannot
// be read, a usage error), with one line on standard error saying why.

const fs = require('node:fs');
const { parseArgs } = require('node:util');
const { solveFile, RpcFailure, DealFileError, DEFAULT_ADDR } = require('./client');

const PROG = 'patience-node';
const USAGE = `Usage: node patience.js [OPTIONS] [FILE]...

Streams UVa deal files (standard input when none is given, or for "-") to patience daemons and
prints what \`patience solve\` prints: exit status 0 when every deal was answered, 1 when some deal
was bad, 2 when the run failed.

Options:
  --addr ADDR              a daemon: http://HOST:PORT, https://HOST:PORT or HOST:PORT (TLS when
                           --tls-ca is given); again, or comma-separated, for others to go on at
                           when one fails (default: ${DEFAULT_ADDR})
  --tls-ca PEM             trust this CA for the daemon's certificate
  --tls-cert PEM           a client certificate, for mutual TLS (with --tls-key)
  --tls-key PEM            the private key of --tls-cert
  --auth-token-file FILE   send \`authorization: Bearer <token>\` with the token in this file
  --deadline SECONDS       give up (exit status 2) when the run takes longer than this
  --batch N                deals per request message (256)
  --precision N            decimals per probability (6)
  --no-gzip                send requests uncompressed
  -h, --help               this text
`;

/** Writes `text` to standard output, waiting when its buffer is full. */
async function write(text) {
  if (text && !process.stdout.write(text)) {
    await new Promise((resolve) => process.stdout.once('drain', resolve));
  }
}

async function main(argv) {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        addr: { type: 'string', multiple: true },
        'tls-ca': { type: 'string' },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
        'auth-token-file': { type: 'string' },
        deadline: { type: 'string' },
        batch: { type: 'string', default: '256' },
        precision: { type: 'string', default: '6' },
        'no-gzip': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    process.stderr.write(`${PROG}: ${e.message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = args;
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const batch = Number(values.batch);
  const precision = Number(values.precision);
  const deadline = values.deadline === undefined ? null : Number(values.deadline);
  if (!Number.isInteger(batch) || batch < 1 || !Number.isInteger(precision) || precision < 0
      || (deadline !== null && !(deadline >= 0)) || !values['tls-cert'] !== !values['tls-key']) {
    process.stderr.write(`${PROG}: --batch must be a whole number of at least 1, --precision of at least 0,`
      + ' --deadline a number of seconds, and --tls-cert goes with --tls-key\n');
    return 2;
  }
  const addrs = (values.addr || [DEFAULT_ADDR]).flatMap((a) => a.split(',')).map((a) => a.trim()).filter(Boolean);
  let status = 0;
  let lines = '';
  try {
    const token = values['auth-token-file'] ? fs.readFileSync(values['auth-token-file'], 'utf8').trim() : null;
    const answers = solveFile(positionals.length ? positionals : ['-'], addrs, {
      token,
      tlsCa: values['tls-ca'],
      tlsCert: values['tls-cert'],
      tlsKey: values['tls-key'],
      deadline,
      batch,
      gzip: !values['no-gzip'],
      onFailover: (failure, to) => process.stderr.write(`${PROG}: ${failure}; going on at ${to}\n`),
    });
    // Answers come a response (256 deals) at a time: what the loop gathered is written once it
    // waits for the next response, or at 64 KiB.
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      const text = lines;
      lines = '';
      if (text) process.stdout.write(text);
    };
    for await (const answer of answers) {
      lines += `${answer.text(precision)}\n`;
      if (answer.error !== null) status = 1;
      if (lines.length >= 65536) {
        const text = lines;
        lines = '';
        await write(text);
      } else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    }
    const text = lines;
    lines = '';
    await write(text);
    return status;
  } catch (e) {
    const text = lines; // what was answered before the failure, printed as `solve` prints it
    lines = '';
    await write(text);
    if (e instanceof RpcFailure) {
      process.stderr.write(`${PROG}: ${e}\n`);
      return 2;
    }
    if (e instanceof DealFileError) {
      process.stderr.write(`${PROG}: ${e.message}\n`);
      return 2;
    }
    if (e && e.code && e.path) { // a TLS or token file that cannot be read
      process.stderr.write(`${PROG}: ${e.path}: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

// grpc-js gives Node an IP address as the TLS server name when the address is one, and Node warns
// (DEP0123) on every such connection: not the user's concern, and a failure's one line must stay
// one line. Every other warning still shows.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = (warning, ...rest) => {
  const code = typeof rest[0] === 'object' && rest[0] !== null ? rest[0].code : rest[1];
  if (code !== 'DEP0123') emitWarning(warning, ...rest);
};

// The reader went away (`| head`): stop quietly, as `patience solve` does.
process.stdout.on('error', (e) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
