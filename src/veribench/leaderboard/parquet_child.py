"""Decode an uploaded Parquet run export in a child process whose memory is capped (issue 26).

A Parquet file says what it holds in its own footer and page headers, and both can lie: a
2 KB file may hold 172 rows of a 20 MiB dictionary-encoded string (3.9 GB once decoded), a
63 KB file whose footer claims 172 rows may hold 5,000,000 (RLE). So the board never
decodes an upload in its own process: :func:`veribench.leaderboard.raid_format.read_run_export`
runs this file as a script (``sys.executable -I parquet_child.py MAX_ROWS MAX_BYTES HEADROOM``;
a new interpreter, never a fork of the server, isolated from the environment's Python
settings; it imports pyarrow and the standard library only), hands it the upload on stdin, and reads back at most ``MAX_BYTES`` + 1 MiB.

The child, in order:

1. sets Arrow's allocator to the system one (``ARROW_DEFAULT_MEMORY_POOL=system``, and glibc
   to one arena, ``MALLOC_ARENA_MAX=1``, both set by the parent; mimalloc and per-thread
   arenas reserve address space up front), one CPU and one I/O thread, then measures its own
   virtual size (``/proc/self/statm``) and caps its address space (``RLIMIT_AS``) at that
   baseline + the upload's size + ``HEADROOM`` bytes, and its CPU time at :data:`CPU_SECONDS`;
2. reads the footer: more than ``MAX_ROWS`` rows, a column of :data:`COLUMNS` missing, twice
   or of the wrong type (``doc_id``, ``detector``, ``status``: strings; ``ranking_score``: a
   float or an integer) is refused before any column is decoded;
3. decodes the four columns :data:`BATCH_ROWS` rows at a time (``iter_batches``), counting
   rows and decoded bytes (strings as plain strings, scores as float64): past ``MAX_ROWS`` rows
   or ``MAX_BYTES`` bytes it stops (the footer's count is not trusted);
4. writes the four columns as an Arrow IPC stream on stdout (at most ``MAX_BYTES`` after
   the schema; buffered, so that a refusal is all a refused file sends) and exits 0.

A refusal is one JSON line ``{"kind", "message", "field", "rows"}`` (:class:`Refused`) on stdout and exit status
:data:`EXIT_REFUSED`; an allocation past the cap (``MemoryError``, Arrow's out-of-memory) exits
:data:`EXIT_MEMORY`; a child killed (``SIGKILL``, ``SIGXCPU``, an abort on allocation) is
read by the parent as the same refusal.
"""

from __future__ import annotations

import io
import json
import os
import resource
import sys
from typing import BinaryIO

import pyarrow as pa
import pyarrow.ipc as paipc
import pyarrow.parquet as pq

#: The run export columns read (``veribench.leaderboard.raid_format.RUN_EXPORT_FIELDS``).
COLUMNS: tuple[str, ...] = ("doc_id", "detector", "status", "ranking_score")
#: Rows decoded at a time.
BATCH_ROWS = 4096
#: Bytes a written batch is counted beyond its buffers (its IPC message and padding: < 1 KiB).
IPC_BATCH_BYTES = 1024
#: The child's CPU limit, seconds (``RLIMIT_CPU``): a legit export of 672,000 rows takes < 2 s.
CPU_SECONDS = 60
#: Exit status of a refusal (one JSON line on stdout).
EXIT_REFUSED = 3
#: Exit status of an allocation past the address-space cap.
EXIT_MEMORY = 4
#: The environment the parent adds for the child (see the module docstring, step 1).
CHILD_ENV = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "1", "OMP_NUM_THREADS": "1"}


class Refused(Exception):
    """A refusal, as the parent words it: ``kind`` ``"rows"`` (more rows than the cap;
    ``rows``: the footer's count, None when counted while decoding), ``"bytes"`` (more decoded
    bytes than the cap), ``"unreadable"`` (Arrow's first line in ``message``) or ``"column"``
    (``message`` names what is wrong with the column ``field``)."""

    def __init__(self, kind: str, message: str = "", field: str | None = None, rows: int | None = None):
        super().__init__(message)
        self.kind, self.field, self.rows = kind, field, rows


def _virtual_size() -> int:
    """This process's virtual size, bytes (Linux: ``/proc/self/statm``'s first field, in pages)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def cap_memory(extra: int) -> None:
    """Cap this process's address space at its current virtual size + ``extra`` bytes and its
    CPU time at :data:`CPU_SECONDS` (each at most the hard limit inherited). Where ``/proc`` is
    missing (not Linux), only the CPU is capped."""
    for kind, want in ((resource.RLIMIT_CPU, CPU_SECONDS), (resource.RLIMIT_AS, None)):
        if want is None:
            try:
                want = _virtual_size() + extra
            except OSError:
                continue
        hard = resource.getrlimit(kind)[1]  # inherited: never raised (it cannot be)
        limit = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(kind, (limit, limit))


def check_schema(schema: pa.Schema, rows: int, max_rows: int) -> None:
    """Refuse, from the footer alone, more than ``max_rows`` rows or a column of :data:`COLUMNS`
    missing, present twice or of the wrong type.

    Raises:
        Refused: one line naming the column (field) or the row counts.
    """
    if rows > max_rows:
        raise Refused("rows", rows=rows)
    for c in COLUMNS:
        n = schema.names.count(c)
        if n == 0:
            raise Refused("column", "column missing (write the file with `veribench export scores --run TAG`)", c)
        if n > 1:
            raise Refused("column", f"the column appears {n} times; a run export holds each column once", c)
        t = schema.field(c).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        ok = (pa.types.is_floating(t) or pa.types.is_integer(t) if c == "ranking_score" else
              pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))
        if not ok:
            want = "a float or an integer" if c == "ranking_score" else "strings"
            raise Refused("column", f"the column must hold {want}, not {t}", c)


def decode(data: bytes, max_rows: int, max_bytes: int, out: BinaryIO) -> None:
    """Write the four columns of the Parquet ``data`` to ``out`` as an Arrow IPC stream (string,
    string, string, float64), a batch at a time: at most ``max_bytes`` bytes of batches (each
    counted as its buffers + :data:`IPC_BATCH_BYTES`) after the schema.

    Raises:
        Refused: see :func:`check_schema`; more than ``max_rows`` rows or ``max_bytes`` bytes
            decoded (whatever the footer said).
    """
    pf = pq.ParquetFile(pa.BufferReader(data), pre_buffer=False)
    check_schema(pf.schema_arrow, pf.metadata.num_rows, max_rows)
    schema = pa.schema([("doc_id", pa.string()), ("detector", pa.string()), ("status", pa.string()),
                        ("ranking_score", pa.float64())])
    rows = size = 0
    with paipc.new_stream(out, schema) as w:
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=list(COLUMNS), use_threads=False):
            rows += batch.num_rows
            if rows > max_rows:
                raise Refused("rows")
            cols = [batch.column(f.name).cast(f.type, safe=False) for f in schema]
            size += sum(a.nbytes for a in cols) + IPC_BATCH_BYTES
            if size > max_bytes:
                raise Refused("bytes")
            w.write_batch(pa.RecordBatch.from_arrays(cols, schema=schema))


def main(argv: list[str]) -> int:
    """``parquet_child.py MAX_ROWS MAX_BYTES HEADROOM`` with the upload on stdin (module docstring)."""
    max_rows, max_bytes, headroom = (int(a) for a in argv[1:4])
    data = sys.stdin.buffer.read()
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    cap_memory(len(data) + headroom)
    out = io.BytesIO()  # written to stdout only once the whole file is read: a refusal is all that is sent
    try:
        decode(data, max_rows, max_bytes, out)
    except Refused as e:
        print(json.dumps({"kind": e.kind, "message": str(e), "field": e.field, "rows": e.rows}), flush=True)
        return EXIT_REFUSED
    except MemoryError:  # pyarrow's ArrowMemoryError is one
        return EXIT_MEMORY
    except Exception as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(json.dumps({"kind": "unreadable", "message": first, "field": None, "rows": None}), flush=True)
        return EXIT_REFUSED
    sys.stdout.buffer.write(out.getbuffer())
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
