"""The Python package's checks (tests/python_package.rs), run by a venv's python where the wheel is
installed, with no test framework: every check is an assert, and a failed one exits non-zero
with its message.

    python_package.py answers DATA_DIR PATIENCE SCRATCH [REFERENCE_DEALS REFERENCE_ANSWERS]
        random1000.in against random1000.out15 (the seed solver's answers), through a list,
        pyarrow (a table in several batches, a RecordBatchReader, a batch, an array, large and
        view strings), polars and DuckDB, on 1 and 2 threads; bad rows against the words
        `patience solve` (the binary PATIENCE, another process) prints for the same rows of a
        Parquet file; and, when given, more deals against reference-solve's answers made for
        this run
    python_package.py rps DATA_DIR PATIENCE SCRATCH
        game="rps": rps-random120.in's cases, one per row, against rps-random120.out15 (the
        seed's answers) through a list and pyarrow; bad cases against the words `patience rps`
        prints for them in a case file
    python_package.py spark DATA_DIR PATIENCE SCRATCH
    python_package.py dask DATA_DIR PATIENCE SCRATCH
    python_package.py ray DATA_DIR PATIENCE SCRATCH
        patience.spark.solve on Spark local[2], patience.dask.solve on a LocalCluster of 2
        workers, patience.ray.solve on ray.init(num_cpus=2): random1000.in and the bad rows, by
        id, against the seed's answers and the words `patience solve` prints; for Ray also
        100,000 rows with a solving actor killed mid-run
    python_package.py exact DATA_DIR
        ties.in with exact=True: each fraction equals ties.out15 and the probability is the
        double nearest to the fraction
    python_package.py refusals
        inputs that cannot be read at all raise, and say why
    python_package.py pickle
        a Solver pickles as its settings, on every protocol
    python_package.py ticker DATA_DIR
        a Python thread keeps running while a long solve runs (the GIL is released)
    python_package.py connect ADDRESS TOKEN DATA_DIR PATIENCE SCRATCH
        patience.connect to the daemon at ADDRESS (started with TOKEN): the answers, bad rows,
        cases and exact fractions as above, through the daemon; a Remote pickles; a wrong token
        raises the daemon's UNAUTHENTICATED
    python_package.py no-remote
        without the remote extra (no grpcio), connect raises ImportError naming the extra

Deals files are in the UVa format (nine lines of four cards); a row is a deal's 36 cards in one
string, its nine lines joined with spaces, as the Parquet input and the gRPC API take it.
"""

import os
import pickle
import subprocess
import sys
import threading
import time
from fractions import Fraction

import patience


def deals_of(path):
    lines = [line.strip() for line in open(path) if line.strip()]
    assert len(lines) % 9 == 0, f"{path}: {len(lines)} lines is not whole deals"
    return [" ".join(lines[i : i + 9]) for i in range(0, len(lines), 9)]


def answers_of(path):
    return [float(line) for line in open(path) if line.strip()]


def column(answers, name):
    return answers.to_pydict()[name]


def check_probabilities(got, want, tolerance, what):
    assert len(got) == len(want), f"{what}: {len(got)} answers for {len(want)} deals"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g is not None and abs(g - w) <= tolerance, f"{what}: row {i}: {g} != {w}"


# Rows that are bad in every way a row can be, and good ones between them.
SAMPLE = (
    "AS 9S 6C KS JC QH AC KH 7S QD JD KD QS TS JS 9H 6D TD AD 8S "
    "QC TH KC 8D 8C 9D TC 7C 9C 7H JH 7D 8H 6S AH 6H"
)
MIXED = [
    SAMPLE,
    "AS 9S",
    SAMPLE.replace("QH", "XH"),
    SAMPLE.replace("QH", "AS"),
    None,
    "",
    "7S 6S / 6C 6H / 7C 6D / / / / / /",
    "7S 6S / 6C 6H /",
    SAMPLE.lower().replace(" ", "\t"),
    SAMPLE + " 6S",
]


def what_solve_says(patience_bin, scratch, rows):
    """Each row's line from `patience solve --precision 15` over a Parquet file of the rows:
    ('p', probability) or ('error', the words after `row N: `)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(scratch, "rows.parquet")
    ids = [f"row-{i}" for i in range(len(rows))]
    pq.write_table(pa.table({"id": ids, "deal": pa.array(rows, pa.string())}), path)
    run = subprocess.run(
        [patience_bin, "solve", "--quiet", "--precision", "15", path],
        capture_output=True,
        text=True,
    )
    assert run.returncode in (0, 1), f"patience solve: {run.returncode}: {run.stderr}"
    said = []
    for n, line in enumerate(run.stdout.splitlines(), start=1):
        prefix = f"error: {path}: row {n}: "
        if line.startswith("error: "):
            assert line.startswith(prefix), f"patience solve's line {n}: {line!r}"
            said.append(("error", line[len(prefix) :]))
        else:
            said.append(("p", float(line)))
    assert len(said) == len(rows), f"patience solve said {len(said)} lines for {len(rows)} rows"
    return said, ids


def check_mixed(answers, said, what, ids=None):
    table = answers.to_pydict()
    assert table["index"] == list(range(len(said))), f"{what}: index {table['index']}"
    if ids is not None:
        assert table["id"] == ids, f"{what}: ids {table['id']}"
    for i, (kind, value) in enumerate(said):
        p, error = table["probability"][i], table["error"][i]
        if kind == "error":
            assert p is None, f"{what}: row {i} is bad, and has a probability {p}"
            assert error == value, f"{what}: row {i}: {error!r}, where solve says {value!r}"
        else:
            assert error is None, f"{what}: row {i}: unexpected error {error!r}"
            assert abs(p - value) <= 1e-12, f"{what}: row {i}: {p} != solve's {value}"


def through_duckdb(table, query):
    """What DuckDB's query over `table` (as `t`) gives as Arrow."""
    import duckdb

    connection = duckdb.connect()
    connection.register("t", table)
    return connection.sql(query).arrow()


def answers(data_dir, patience_bin, scratch, extra=None):
    import polars as pl
    import pyarrow as pa

    deals = deals_of(os.path.join(data_dir, "random1000.in"))
    want = answers_of(os.path.join(data_dir, "random1000.out15"))
    assert len(deals) == len(want) == 1000
    tolerance = 1e-12
    table = pa.Table.from_batches(
        pa.table({"deal": deals}).to_batches(max_chunksize=300)
    )
    assert len(table.to_batches()) > 1
    fronts = {
        "a list": lambda: deals,
        "a tuple": lambda: tuple(deals),
        "a pyarrow table in batches": lambda: table,
        "a pyarrow RecordBatchReader": lambda: pa.RecordBatchReader.from_batches(
            table.schema, table.to_batches()
        ),
        "a pyarrow RecordBatch": lambda: table.combine_chunks().to_batches()[0],
        "a pyarrow Array": lambda: pa.array(deals),
        "large strings": lambda: pa.table({"deal": pa.array(deals, pa.large_string())}),
        "string views": lambda: pa.table({"deal": pa.array(deals, pa.string_view())}),
        "a polars DataFrame": lambda: pl.DataFrame({"deal": deals}),
        "DuckDB's Arrow": lambda: through_duckdb(table, "SELECT deal FROM t"),
    }
    for what, make in fronts.items():
        for threads in (1, 2):
            got = patience.solve(make(), threads=threads)
            check_probabilities(
                column(got, "probability"), want, tolerance, f"{what}, {threads} threads"
            )
            assert column(got, "error") == [None] * 1000, what
            assert column(got, "index") == list(range(1000)), what
    # The answers are Arrow for pyarrow and polars alike, with their types.
    got = patience.solve(table)
    arrow = pa.table(got)
    assert arrow.schema.field("index").type == pa.uint64(), arrow.schema
    assert arrow.schema.field("probability").type == pa.float64(), arrow.schema
    assert arrow.schema.field("error").type == pa.string(), arrow.schema
    assert arrow.column_names == ["index", "probability", "error"], arrow.column_names
    frame = pl.DataFrame(got)
    check_probabilities(frame["probability"].to_list(), want, tolerance, "polars.DataFrame(answers)")
    assert pa.table(got).equals(arrow), "a second read of the answers differs"

    # Bad rows: the words `patience solve` prints, row by row, and ids carried.
    said, ids = what_solve_says(patience_bin, scratch, MIXED)
    assert sum(kind == "error" for kind, _ in said) >= 6, said
    check_mixed(patience.solve(MIXED), said, "a list with bad rows")
    mixed = pa.table({"id": ids, "deal": pa.array(MIXED, pa.string())})
    check_mixed(patience.solve(mixed), said, "a pyarrow table with bad rows", ids)
    check_mixed(patience.solve(pl.from_arrow(mixed)), said, "polars with bad rows", ids)
    check_mixed(
        patience.solve(through_duckdb(mixed, "SELECT id, deal FROM t")),
        said,
        "DuckDB with bad rows",
        ids,
    )
    # Ids of another type are carried as they are.
    numbered = patience.solve(pa.table({"id": list(range(10, 20)), "deal": MIXED}))
    assert column(numbered, "id") == list(range(10, 20)), column(numbered, "id")
    # What a list may hold that a string column cannot: a non-string is a bad row too.
    odd = patience.solve([SAMPLE, 7, b"AS", SAMPLE])
    errors = column(odd, "error")
    assert errors[0] is None and errors[3] is None, errors
    assert errors[1] == "a value of type int, not a str", errors
    assert errors[2] == "a value of type bytes, not a str", errors

    if extra:
        deals = deals_of(extra[0])
        want = answers_of(extra[1])
        got = patience.solve(deals, threads=2)
        check_probabilities(column(got, "probability"), want, 1e-12, "reference-solve's deals")
    print("answers: ok")


def cases_of(path):
    """A case file's cases, each as the text of its lines (its n, Maze's, the others')."""
    lines = [line.strip() for line in open(path) if line.strip()]
    count, at, cases = int(lines[0]), 1, []
    for _ in range(count):
        n = int(lines[at])
        cases.append("\n".join(lines[at : at + n + 2]))
        at += n + 2
    assert at == len(lines), f"{path}: {len(lines) - at} lines after the cases"
    return cases


# Bad cases that stay bad alone and in a file, between good ones.
BAD_CASES = [
    "0\n0.2 x 0.4",
    "x\n0.2 0.4 0.4",
    "0\n0.5 0.5 0.5",
    "0\n1.5 -0.5 0",
    "1\n0.2 0.4 0.4\n0.2 0.8",
    "16\n" + "\n".join(["0.2 0.4 0.4"] * 17),
]


def what_rps_says(patience_bin, scratch, cases):
    """Two good cases with BAD_CASES between them, and what `patience rps` (another process)
    says of each in a case file: ("p", probability) or ("error", its words)."""
    rows = [cases[0]] + BAD_CASES + [cases[1]]
    path = os.path.join(scratch, "cases.in")
    with open(path, "w") as f:
        f.write(f"{len(rows)}\n" + "\n".join(rows) + "\n")
    run = subprocess.run(
        [patience_bin, "rps", "--quiet", "--precision", "15", path], capture_output=True, text=True
    )
    assert run.returncode == 1, f"patience rps: {run.returncode}: {run.stderr}"
    said = []
    for k, line in enumerate(run.stdout.splitlines(), start=1):
        prefix = f"error: {path}: case {k} (line "
        if line.startswith("error: "):
            assert line.startswith(prefix), f"patience rps's line {k}: {line!r}"
            said.append(("error", line[len(prefix) :].split("): ", 1)[1]))
        else:
            said.append(("p", float(line)))
    assert len(said) == len(rows), f"patience rps said {len(said)} lines for {len(rows)} cases"
    assert [kind for kind, _ in said] == ["p"] + ["error"] * len(BAD_CASES) + ["p"], said
    return rows, said


def rps(data_dir, patience_bin, scratch):
    import pyarrow as pa

    cases = cases_of(os.path.join(data_dir, "rps-random120.in"))
    want = answers_of(os.path.join(data_dir, "rps-random120.out15"))
    assert len(cases) == len(want) == 120
    for what, data in {
        "a list": cases,
        "a pyarrow table": pa.table({"case": cases}),
    }.items():
        for threads in (1, 2):
            got = patience.solve(data, "case", game="rps", threads=threads)
            check_probabilities(column(got, "probability"), want, 1e-12, f"rps, {what}")
            assert column(got, "error") == [None] * 120, what

    rows, said = what_rps_says(patience_bin, scratch, cases)
    check_mixed(patience.solve(rows + [None], game="rps"), said + [("error", "no case (null)")], "rps cases")
    print("rps: ok")


def by_id(data_dir, patience_bin, scratch):
    """Rows for an engine (ids and deals: random1000.in, then the bad rows) and what each id's
    answer must be: the seed's probability, or `patience solve`'s words."""
    deals = deals_of(os.path.join(data_dir, "random1000.in"))
    want = answers_of(os.path.join(data_dir, "random1000.out15"))
    said, _ = what_solve_says(patience_bin, scratch, MIXED)
    ids = [f"d{i}" for i in range(len(deals))] + [f"m{i}" for i in range(len(MIXED))]
    expected = dict(zip(ids, [("p", p) for p in want] + said))
    return ids, deals + MIXED, expected


def check_by_id(rows, expected, what):
    """`rows`: (id, probability, error) as an engine gave them back, one per input row."""
    assert sorted(r[0] for r in rows) == sorted(expected), f"{what}: not the input's ids"
    for id_, p, error in rows:
        kind, value = expected[id_]
        if kind == "p":
            assert error is None and abs(p - value) <= 1e-12, f"{what}: {id_}: {p}, {error}"
        else:
            assert p is None or p != p, f"{what}: {id_} is bad, and has {p}"
            assert error == value, f"{what}: {id_}: {error!r}, where solve says {value!r}"


def spark(data_dir, patience_bin, scratch):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import patience.spark
    from pyspark.sql import SparkSession

    ids, deals, expected = by_id(data_dir, patience_bin, scratch)
    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "5")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        df = session.createDataFrame(list(zip(ids, deals)), "id string, deal string")
        out = patience.spark.solve(df.repartition(5)).collect()
        assert out[0].asDict().keys() == {"id", "deal", "probability", "error"}, out[0]
        check_by_id([(r["id"], r["probability"], r["error"]) for r in out], expected, "spark")
    finally:
        session.stop()
    print("spark: ok")


def dask(data_dir, patience_bin, scratch):
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    import patience.dask

    ids, deals, expected = by_id(data_dir, patience_bin, scratch)
    frame = pd.DataFrame({"id": ids, "deal": deals})
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        with Client(cluster):
            out = patience.dask.solve(dd.from_pandas(frame, npartitions=7)).compute()
    assert list(out.columns) == ["id", "deal", "probability", "error"], list(out.columns)
    errors = [None if e is None or e != e else e for e in out["error"]]
    probabilities = [None if p != p else p for p in out["probability"]]
    check_by_id(list(zip(out["id"], probabilities, errors)), expected, "dask")
    print("dask: ok")


def ray(data_dir, patience_bin, scratch):
    import pyarrow as pa
    import ray as ray_

    import patience.ray

    ids, deals, expected = by_id(data_dir, patience_bin, scratch)
    ray_.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        table = pa.table({"id": ids, "deal": pa.array(deals, pa.string())})
        out = patience.ray.solve(ray_.data.from_arrow(table).repartition(4)).take_all()
        assert out[0].keys() == {"id", "deal", "probability", "error"}, out[0]
        check_by_id([(r["id"], r["probability"], r["error"]) for r in out], expected, "ray")
        killed = ray_killed_mid_run(data_dir)
    finally:
        ray_.shutdown()
    print(f"ray: ok ({killed})")


def ray_killed_mid_run(data_dir):
    """100,000 rows in 50 blocks; once the first answers are back, one solving actor is killed
    (SIGKILL). Ray restarts it and retries its batches: every row is still answered, once, with
    the seed's answer."""
    import signal

    import pyarrow as pa
    import ray as ray_

    import patience.ray

    deals = deals_of(os.path.join(data_dir, "random1000.in"))
    want = answers_of(os.path.join(data_dir, "random1000.out15"))
    copies = 100
    ids = [f"{c}-{i}" for c in range(copies) for i in range(len(deals))]
    table = pa.table({"id": ids, "deal": deals * copies})
    answered, killed = {}, None
    solving = patience.ray.solve(ray_.data.from_arrow(table).repartition(50))
    for batch in solving.iter_batches(batch_format="pyarrow", batch_size=None):
        for id_, p, error in zip(*(batch[n].to_pylist() for n in ("id", "probability", "error"))):
            assert id_ not in answered, f"{id_} answered twice"
            answered[id_] = (p, error)
        if killed is None:
            ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True)
            actors = [
                int(line.split()[0])
                for line in ps.stdout.splitlines()
                if "MapWorker(MapBatches(_Solve))" in line
            ]
            assert actors, f"no solving actor to kill: {ps.stdout}"
            os.kill(actors[0], signal.SIGKILL)
            killed = len(answered)
    assert killed < len(ids), "the actor was killed after the run"
    assert len(answered) == len(ids), f"{len(answered)} of {len(ids)} rows answered"
    for id_, (p, error) in answered.items():
        i = int(id_.split("-")[1])
        assert error is None and abs(p - want[i]) <= 1e-12, f"{id_}: {p}, {error}"
    return f"an actor killed after {killed} of {len(ids)} rows"


def exact(data_dir):
    deals = deals_of(os.path.join(data_dir, "ties.in"))
    want = answers_of(os.path.join(data_dir, "ties.out15"))
    got = patience.solve(deals, exact=True).to_pydict()
    assert len(got["exact"]) == len(deals) > 10
    for i, (fraction, p, w) in enumerate(zip(got["exact"], got["probability"], want)):
        value = Fraction(fraction)
        assert abs(float(value) - w) <= 1e-15, f"row {i}: {fraction} is not {w}"
        assert p == float(value), f"row {i}: {p!r} is not the double nearest {fraction}"
    assert "exact" not in patience.solve(deals).column_names
    print("exact: ok")


def refusals():
    import pyarrow as pa

    def raises(kind, words, call):
        try:
            call()
        except kind as e:
            assert words in str(e), f"{kind.__name__}: {e}"
            return
        raise AssertionError(f"no {kind.__name__} ({words!r})")

    raises(ValueError, "no column `deals` (its columns: deal)", lambda: patience.solve(pa.table({"deal": [SAMPLE]}), "deals"))
    raises(ValueError, "not strings", lambda: patience.solve(pa.table({"deal": [1]})))
    raises(TypeError, "not one str", lambda: patience.solve(SAMPLE))
    raises(TypeError, "not int", lambda: patience.solve(5))
    raises(ValueError, "threads must be at least 1", lambda: patience.solve([SAMPLE], threads=0))
    raises(ValueError, "threads must be at least 1", lambda: patience.Solver(threads=0))
    raises(ValueError, 'game "chess"', lambda: patience.solve([SAMPLE], game="chess"))
    raises(ValueError, "exact=True is for deals", lambda: patience.solve(["0\n1 0 0"], game="rps", exact=True))
    empty = patience.solve([])
    assert len(empty) == 0 and empty.column_names == ["index", "probability", "error"]
    assert pa.table(empty).num_rows == 0
    print("refusals: ok")


def pickles():
    import copy

    for threads in (None, 1, 3):
        solver = patience.Solver(threads=threads)
        first = solver.solve([SAMPLE]).to_pydict()
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            back = pickle.loads(pickle.dumps(solver, protocol=protocol))
            assert type(back) is patience.Solver, type(back)
            assert back.threads == threads, (protocol, back.threads, threads)
            assert back.solve([SAMPLE]).to_pydict() == first, protocol
        assert copy.deepcopy(solver).threads == threads
    # Settings only: a used solver's pickle is as small as a new one's.
    used = patience.Solver(threads=2)
    used.solve([SAMPLE] * 600)
    assert len(pickle.dumps(used)) == len(pickle.dumps(patience.Solver(threads=2))) < 200
    print("pickle: ok")


def ticker(data_dir):
    deals = deals_of(os.path.join(data_dir, "random1000.in"))
    solver = patience.Solver(threads=1)
    ticks = 0
    stop = threading.Event()

    def tick():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    thread = threading.Thread(target=tick)
    thread.start()
    time.sleep(0.05)
    # Long enough to see: grown until one solve takes 0.3 s.
    rows = deals
    while True:
        before, start = ticks, time.monotonic()
        got = solver.solve(rows)
        took, during = time.monotonic() - start, ticks - before
        if took >= 0.3:
            break
        rows = rows * 2
    stop.set()
    thread.join()
    assert len(got) == len(rows)
    # With the GIL held the ticker could not run at all: a tick or two at the edges.
    assert during >= 30, f"{during} ticks in a {took:.2f} s solve: the GIL was held"
    print(f"ticker: ok ({during} ticks in a {took:.2f} s solve of {len(rows)} deals)")


def connect(address, token, data_dir, patience_bin, scratch):
    """patience.connect: a daemon's answers are the seed's, for deals, positions, cases and exact
    fractions; bad rows carry what `patience solve` and `patience rps` print; ids are carried;
    a Remote pickles; a wrong token raises the daemon's refusal."""
    import polars as pl
    import pyarrow as pa
    from patience.remote import Remote, RpcFailure

    deals = deals_of(os.path.join(data_dir, "random1000.in"))
    want = answers_of(os.path.join(data_dir, "random1000.out15"))
    # Small requests, so a solve is many messages on one stream.
    remote = patience.connect(address, token, batch=64)
    assert isinstance(remote, Remote), type(remote)
    table = pa.Table.from_batches(pa.table({"deal": deals}).to_batches(max_chunksize=300))
    for what, data in {"a list": deals, "pyarrow": table, "polars": pl.DataFrame({"deal": deals})}.items():
        got = remote.solve(data)
        check_probabilities(column(got, "probability"), want, 1e-12, f"connect, {what}")
        assert column(got, "error") == [None] * 1000, what
        assert column(got, "index") == list(range(1000)), what
    assert pa.table(remote.solve(table)).column_names == ["index", "probability", "error"]

    said, ids = what_solve_says(patience_bin, scratch, MIXED)
    mixed = pa.table({"id": ids, "deal": pa.array(MIXED, pa.string())})
    check_mixed(remote.solve(mixed), said, "connect, bad rows", ids)
    odd = remote.solve([SAMPLE, 7, None, SAMPLE])
    assert column(odd, "error")[1:3] == ["a value of type int, not a str", "no deal (null)"], odd.to_pydict()

    cases = cases_of(os.path.join(data_dir, "rps-random120.in"))
    want_cases = answers_of(os.path.join(data_dir, "rps-random120.out15"))
    got = remote.solve(pa.table({"case": cases}), "case", game="rps")
    check_probabilities(column(got, "probability"), want_cases, 1e-12, "connect, rps")
    rows, said = what_rps_says(patience_bin, scratch, cases)
    check_mixed(remote.solve(rows + [None], game="rps"), said + [("error", "no case (null)")], "connect, bad cases")

    ties = deals_of(os.path.join(data_dir, "ties.in"))
    want_ties = answers_of(os.path.join(data_dir, "ties.out15"))
    got = remote.solve(ties, exact=True).to_pydict()
    for i, (fraction, p, w) in enumerate(zip(got["exact"], got["probability"], want_ties, strict=True)):
        assert abs(float(Fraction(fraction)) - w) <= 1e-15, f"row {i}: {fraction} is not {w}"
        assert p == float(Fraction(fraction)), f"row {i}: {p!r} is not the double nearest {fraction}"

    back = pickle.loads(pickle.dumps(remote))
    check_probabilities(column(back.solve(deals[:50]), "probability"), want[:50], 1e-12, "a pickled Remote")
    remote.close()
    try:
        patience.connect(address, "not-" + token).solve([SAMPLE])
    except RpcFailure as e:
        assert e.code.name == "UNAUTHENTICATED", str(e)
    else:
        raise AssertionError("a wrong token was answered")
    print("connect: ok")


def no_remote():
    """Without the remote extra, connect says which extra it needs."""
    try:
        patience.connect("http://127.0.0.1:1")
    except ImportError as e:
        assert "pip install 'patience[remote]'" in str(e), str(e)
    else:
        raise AssertionError("connect worked without grpcio")
    print("no-remote: ok")


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "answers":
        answers(args[0], args[1], args[2], args[3:5] or None)
    elif command == "rps":
        rps(args[0], args[1], args[2])
    elif command == "spark":
        spark(args[0], args[1], args[2])
    elif command == "dask":
        dask(args[0], args[1], args[2])
    elif command == "ray":
        ray(args[0], args[1], args[2])
    elif command == "exact":
        exact(args[0])
    elif command == "connect":
        connect(*args[:5])
    elif command == "no-remote":
        no_remote()
    elif command == "refusals":
        refusals()
    elif command == "pickle":
        pickles()
    elif command == "ticker":
        ticker(args[0])
    else:
        sys.exit(f"unknown command {command}")
