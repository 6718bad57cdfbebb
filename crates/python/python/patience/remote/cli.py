"""patience-py: stream UVa deal files to patience daemons and print what `patience solve` prints.

    patience-py [--addr ADDR]... [--tls-ca PEM] [--auth-token-file FILE] [--deadline SECONDS]
                [FILE]...

One line per deal on standard output (the probability with --precision decimals, or an `error:`
line), then the exit status: 0 when every deal was answered, 1 when some deal was bad, 2 when the
run failed (a daemon's status, a file that cannot be read, a usage error), with one line on
standard error saying why.
"""

import argparse
import os
import sys

from .client import DEFAULT_ADDR, RpcFailure, solve_file
from .deals import DealFileError

PROG = "patience-py"


def _parser():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help='UVa-format deal files; standard input when none is given or for "-"')
    parser.add_argument("--addr", action="append", metavar="ADDR",
                        help="a daemon: http://HOST:PORT, https://HOST:PORT or HOST:PORT (TLS when"
                             " --tls-ca is given); again, or comma-separated, for others to go on at"
                             f" when one fails (default: {DEFAULT_ADDR})")
    parser.add_argument("--tls-ca", metavar="PEM", help="trust this CA for the daemon's certificate")
    parser.add_argument("--tls-cert", metavar="PEM", help="a client certificate, for mutual TLS")
    parser.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    parser.add_argument("--auth-token-file", metavar="FILE",
                        help="send `authorization: Bearer <token>` with the token in this file")
    parser.add_argument("--deadline", type=float, metavar="SECONDS",
                        help="give up (exit status 2) when the run takes longer than this")
    parser.add_argument("--batch", type=int, default=256, help="deals per request message (256)")
    parser.add_argument("--precision", type=int, default=6, help="decimals per probability (6)")
    parser.add_argument("--no-gzip", action="store_true", help="send requests uncompressed")
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.batch < 1 or args.precision < 0 or (args.tls_cert is None) != (args.tls_key is None):
        print(f"{PROG}: --batch must be at least 1, --precision at least 0, and --tls-cert goes"
              " with --tls-key", file=sys.stderr)
        return 2
    addrs = [a.strip() for given in (args.addr or [DEFAULT_ADDR]) for a in given.split(",") if a.strip()]
    token = None
    try:
        if args.auth_token_file:
            with open(args.auth_token_file, encoding="utf-8") as f:
                token = f.read().strip()
        answers = solve_file(
            args.files or ["-"], addrs, token=token, tls_ca=args.tls_ca, tls_cert=args.tls_cert,
            tls_key=args.tls_key, deadline=args.deadline, batch=args.batch, gzip=not args.no_gzip,
            on_failover=lambda failure, to: print(f"{PROG}: {failure}; going on at {to}",
                                                  file=sys.stderr),
        )
        if "-" in (args.files or ["-"]):
            # Deals typed or piped in as they come get their answers as they come, as
            # `patience client` prints them; a file's answers go out a buffer at a time.
            sys.stdout.reconfigure(line_buffering=True)
        status = 0
        for answer in answers:
            print(answer.text(args.precision))
            if answer.error is not None:
                status = 1
        sys.stdout.flush()
        return status
    except (RpcFailure, DealFileError) as e:
        sys.stdout.flush()
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as `patience solve` does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:  # a TLS or token file that cannot be read
        print(f"{PROG}: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2


def run():
    """The console script's entry point."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    run()
