"""What data teams' own tools make of patience's columns (tests/columnar.rs): pyarrow and DuckDB,
from PyPI, read the Parquet files and Arrow streams patience writes, and pyarrow writes the Parquet
inputs it reads.

    columnar.py rows FILE.parquet      one JSON object per row, as pyarrow reads it, then the
                                       file's schema and metadata
    columnar.py stream FILE            the same for an Arrow IPC stream
    columnar.py duckdb FILE.parquet    DuckDB's count, avg(probability) and every probability
    columnar.py write DEALS OUT ROWS   the UVa file DEALS as a Parquet input (pyarrow, snappy,
                                       row groups of ROWS rows): columns id ("deal-N") and deal
                                       (one line of 36 cards), with a null deal and a bad one
                                       appended

A probability is printed as its 64 bits (an unsigned integer), which name it exactly.
"""

import json
import struct
import sys


def bits(p):
    return None if p is None else struct.unpack("<Q", struct.pack("<d", p))[0]


def rows(table):
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    for i in range(table.num_rows):
        p = columns["probability"][i]
        yield {
            "index": columns["index"][i],
            "id": columns["id"][i],
            "p": bits(p),
            "error": columns["error"][i],
        }


def describe(table, metadata):
    print(json.dumps({
        "schema": {field.name: str(field.type) for field in table.schema},
        "nullable": {field.name: field.nullable for field in table.schema},
        "metadata": {k.decode(): v.decode() for k, v in (metadata or {}).items()
                     if k != b"ARROW:schema"},
    }))


def main():
    command, path = sys.argv[1], sys.argv[2]
    if command == "rows":
        import pyarrow.parquet as pq
        table = pq.read_table(path)
        for row in rows(table):
            print(json.dumps(row))
        describe(table, pq.ParquetFile(path).metadata.metadata)
    elif command == "stream":
        import pyarrow.ipc as ipc
        with open(path, "rb") as f:
            table = ipc.open_stream(f.read()).read_all()
        for row in rows(table):
            print(json.dumps(row))
        describe(table, None)
    elif command == "duckdb":
        import duckdb
        con = duckdb.connect()
        count, avg = con.execute(
            "SELECT count(*), avg(probability) FROM read_parquet(?)", [path]).fetchone()
        ps = [p for (p,) in con.execute(
            "SELECT probability FROM read_parquet(?) ORDER BY index", [path]).fetchall()]
        print(json.dumps({
            "count": count,
            "avg": avg,
            "probabilities": [bits(p) for p in ps],
        }))
    elif command == "write":
        import pyarrow as pa
        import pyarrow.parquet as pq
        out, group = sys.argv[3], int(sys.argv[4])
        cards = open(path).read().split()
        deals = [" ".join(cards[i:i + 36]) for i in range(0, len(cards), 36)]
        deals += [None, "AS KS"]
        table = pa.table({
            "id": [f"deal-{i}" for i in range(len(deals))],
            "deal": deals,
        })
        pq.write_table(table, out, row_group_size=group, compression="snappy")
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
