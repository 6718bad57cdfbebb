#!/usr/bin/env python3
"""Runs the documentation's "Calling it" examples against a real daemon and checks what they print.

    scripts/interop.py --grpcurl PATH --buf PATH --venv DIR [--patience target/release/patience]
                       [--doc FILE#HEADING ...]

Starts `patience serve` on 127.0.0.1:0 and, from each section given by --doc (by default the
README's "Calling it from any gRPC client" and docs/api.md's "Calling it", each a heading and
everything under it up to the next heading of its level or above):
- runs every `grpcurl` command of its ```sh blocks (backslash continuations joined, 127.0.0.1:50051
  rewritten to the daemon's address) and compares its output with the ```text or ```json block
  that follows it: text line by line, a `...` line standing for any lines; JSON parsed, so
  formatting is free but every field and value must be equal;
- makes the same call with `buf curl` (list: --list-services, with reflection v1 where grpcurl
  says v1alpha; describe: --list-methods, which must list the rpcs the describe block shows) and
  compares its output with the same block; every `buf curl` command in the sections must be one
  of these;
- runs every `$ COMMAND` line of its ```sh blocks (`.venv` read as --venv, 127.0.0.1:50051 as the
  daemon's address) with bash from the repository's root, in order, and compares its standard
  output with the lines after it in the block, exactly (the README's Python and Node clients);
- runs the ```sh block that runs `sample.py` (`.venv` read as --venv; a command a `$` line ran
  already is not run again) and with it the ```python snippet (exactly one among the sections),
  which must print the id and the probability the text after it says it prints (within 1e-6).
Exits non-zero, saying what differs, on any mismatch; stops the daemon in every case.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC_ADDR = "127.0.0.1:50051"  # the address the documentation shows
DOCS = ["README.md#Calling it from any gRPC client", "docs/api.md#Calling it"]
TIMEOUT = 60  # seconds for one command; only catches a hang


class Mismatch(Exception):
    pass


def section(doc, text, title):
    """The text under the heading `title` (of any level) of `doc`'s `text`, up to the next heading
    of the same level or above; lines in fenced blocks (a `# comment`) are never headings."""
    lines, level, fenced = [], None, False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"(#{1,6}) (.*)", line)
        if level is None:
            if heading and heading.group(2).strip() == title:
                level = len(heading.group(1))
            continue
        if heading and len(heading.group(1)) <= level:
            break
        lines.append(line)
    if level is None:
        raise Mismatch(f"{doc} has no section '{title}'")
    return "".join(lines)


def blocks(text):
    """The fenced blocks of `text` in order, as (language, body)."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]


def commands(body):
    """The shell commands of a ```sh block: continuations joined, comments and blanks dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def dollar_examples(body):
    """The `$ COMMAND` lines of a ```sh block, each with the lines after it up to the next one."""
    examples = []
    for line in body.splitlines():
        if line.startswith("$ "):
            examples.append((line[2:], ""))
        elif examples:
            examples[-1] = (examples[-1][0], examples[-1][1] + line + "\n")
    return examples


def local(cmd, venv, addr):
    """A documented command as it runs here: the venv given, the daemon's address."""
    cmd = re.sub(r"(^|[ /=])\.venv/", rf"\g<1>{venv}/", cmd)
    return cmd.replace("-m venv .venv", f"-m venv {venv}").replace(DOC_ADDR, addr)


def run(argv, **kwargs):
    out = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, **kwargs)
    if out.returncode != 0:
        raise Mismatch(f"`{shlex.join(argv)}` exited {out.returncode}:\n{out.stderr}{out.stdout}")
    return out.stdout


def text_matches(expected, actual):
    """Whether `actual` has the lines of `expected` in order, a `...` line matching any lines."""
    pattern = ""
    for line in expected.rstrip("\n").splitlines():
        pattern += r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line.rstrip()) + r"[ \t]*\n"
    return re.fullmatch(pattern, actual.rstrip("\n") + "\n") is not None


def check(what, lang, expected, actual):
    if lang == "json":
        try:
            got = json.loads(actual)
        except json.JSONDecodeError as e:
            raise Mismatch(f"{what}: printed no JSON ({e}):\n{actual}")
        if got != json.loads(expected):
            raise Mismatch(f"{what}: printed\n{json.dumps(got)}\nbut the docs say\n{expected}")
    elif not text_matches(expected, actual):
        raise Mismatch(f"{what}: printed\n{actual}but the docs say\n{expected}")
    print(f"  ok: {what}")


def start_daemon(patience, log):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATIENCE_")}
    env["RUST_LOG"] = "info"
    daemon = subprocess.Popen(
        [patience, "serve", "--addr", "127.0.0.1:0", "--workers", "1"],
        stdout=subprocess.DEVNULL, stderr=log, env=env,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        match = re.search(r"listening on (127\.0\.0\.1:\d+)", Path(log.name).read_text())
        if match:
            return daemon, match.group(1)
        if daemon.poll() is not None:
            break
        time.sleep(0.1)
    daemon.kill()
    raise Mismatch(f"the daemon did not log 'listening on':\n{Path(log.name).read_text()}")


def buf_curl_argv(grpcurl_argv, buf, addr):
    """The `buf curl` call equivalent to a documented grpcurl call, and what kind of call it is."""
    args = grpcurl_argv[1:]
    if args[0] != "-plaintext":
        raise Mismatch(f"unexpected grpcurl command: {shlex.join(grpcurl_argv)}")
    args = args[1:]
    data = None
    if args[0] == "-d":
        data, args = args[1], args[2:]
    target, verb, rest = args[0], args[1], args[2:]
    flags = ["curl", "--protocol", "grpc", "--http2-prior-knowledge"]
    url = f"http://{target}"
    if verb == "list":
        return [buf, *flags, "--list-services", url], "list"
    if verb == "describe":
        return [buf, *flags, "--list-methods", url], ("describe", rest[0])
    return [buf, *flags, *(["-d", data] if data is not None else []), f"{url}/{verb}"], "call"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patience", default=str(ROOT / "target/release/patience"))
    parser.add_argument("--grpcurl", required=True)
    parser.add_argument("--buf", required=True)
    parser.add_argument("--venv", required=True, help="a venv with crates/python/requirements-remote.txt")
    parser.add_argument("--doc", action="append", metavar="FILE#HEADING",
                        help=f"a section to check, FILE relative to the repository (default: {DOCS})")
    args = parser.parse_args()

    found, calling = [], ""
    for doc in args.doc or DOCS:
        name, _, title = doc.partition("#")
        text = section(name, (ROOT / name).read_text(encoding="utf-8"), title)
        calling += text
        # A command and the block of what it prints are paired within one section only.
        found += blocks(text) + [("", "")]
    work = tempfile.TemporaryDirectory(prefix="interop.")
    log = open(Path(work.name) / "daemon.log", "w")
    daemon, addr = start_daemon(args.patience, log)
    print(f"interop: daemon on {addr}")
    checked = 0
    try:
        buf_commands_run = set()
        doc_buf_commands = []
        python_setup = python_code = None
        venv = os.path.relpath(args.venv, ROOT)
        dollar_run = set()
        for i, (lang, body) in enumerate(found):
            if lang == "python":
                if python_code is not None:
                    raise Mismatch("more than one ```python snippet in the sections checked")
                python_code = body
            if lang != "sh":
                continue
            for shown, expected in dollar_examples(body):
                cmd = local(shown, venv, addr)
                out = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True,
                                     timeout=600)
                if out.returncode != 0 or out.stdout != expected:
                    raise Mismatch(f"`$ {shown}` exited {out.returncode} and printed\n{out.stdout}"
                                   f"but the docs say\n{expected}(stderr: {out.stderr})")
                dollar_run.add(shown)
                print(f"  ok: $ {shown[:70]}")
                checked += 1
            cmds = [c for c in commands(body) if not c.startswith("$ ")]
            if any(" sample.py" in c for c in cmds):
                python_setup = cmds
            doc_buf_commands += [c for c in cmds if c.startswith("buf curl ")]
            grpcurls = [c for c in cmds if c.startswith("grpcurl ")]
            if not grpcurls:
                continue
            if len(grpcurls) != 1 or i + 1 >= len(found) or found[i + 1][0] not in ("text", "json"):
                raise Mismatch(f"each grpcurl command needs its own ```sh block followed by a ```text or"
                               f" ```json block of what it prints:\n{body}")
            exp_lang, expected = found[i + 1]
            argv = shlex.split(grpcurls[0])
            name = "list" if argv[-1] == "list" else " ".join(argv[-2:]) if argv[-2] == "describe" else argv[-1]
            doc_argv = list(argv)
            argv = [args.grpcurl] + [a.replace(DOC_ADDR, addr) for a in argv[1:]]
            check(f"grpcurl {name}", exp_lang, expected, run(argv))
            checked += 1

            buf_argv, kind = buf_curl_argv(argv, args.buf, addr)
            buf_commands_run.add(shlex.join(["buf", *buf_argv[1:]]).replace(addr, DOC_ADDR))
            out = run(buf_argv)
            if kind == "list":
                check("buf curl --list-services", exp_lang,
                      expected.replace("grpc.reflection.v1alpha.", "grpc.reflection.v1."), out)
            elif kind == "call":
                check(f"buf curl {doc_argv[-1]}", exp_lang, expected, out)
            else:
                service = kind[1]
                rpcs = re.findall(r"^\s*rpc (\w+) ", expected, re.M)
                listed = sorted(m for m in out.split() if m.startswith(service + "/"))
                if not rpcs or sorted(f"{service}/{r}" for r in rpcs) != listed:
                    raise Mismatch(f"buf curl --list-methods lists {listed} for {service}; the docs'"
                                   f" describe shows rpcs {rpcs}")
                print(f"  ok: buf curl --list-methods ({service}: {', '.join(rpcs)})")
            checked += 1

        for cmd in doc_buf_commands:
            if shlex.join(shlex.split(cmd)) not in buf_commands_run:
                raise Mismatch(f"the docs' `{cmd}` is not the buf curl form of one of their grpcurl"
                               f" calls (checked: {sorted(buf_commands_run)})")
            print(f"  ok: the docs' {cmd[:60]}... is one of the calls above")
            checked += 1

        if python_setup is None or python_code is None:
            raise Mismatch("the sections checked have no Python snippet or no block that runs sample.py")
        said = re.search(r"```\n\nprints `(\S+) ([0-9.]+)`", calling)
        if not said:
            raise Mismatch("the docs do not say what the Python snippet prints (`prints `ID P``)")
        snippet = Path(work.name) / "sample.py"
        snippet.write_text(python_code.replace(DOC_ADDR, addr))
        for cmd in python_setup:
            if cmd in dollar_run:
                continue
            cmd = local(cmd, venv, addr).replace(" sample.py", f" {snippet}")
            out = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True,
                                 timeout=600)
            if out.returncode != 0:
                raise Mismatch(f"`{cmd}` exited {out.returncode}:\n{out.stderr}{out.stdout}")
        printed = out.stdout.split()
        if (len(printed) != 2 or printed[0] != said.group(1)
                or abs(float(printed[1]) - float(said.group(2))) > 1e-6):
            raise Mismatch(f"the Python snippet printed {out.stdout!r}; the docs say"
                           f" `{said.group(1)} {said.group(2)}`")
        print(f"  ok: python snippet prints {out.stdout.strip()}")
        checked += 1
    except (Mismatch, subprocess.TimeoutExpired) as e:
        print(f"interop: FAILED: {e}", file=sys.stderr)
        print(f"interop: {checked} passed, 1 failed")
        return 1
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=15)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        work.cleanup()
    print(f"interop: {checked} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
