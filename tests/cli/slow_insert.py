"""Run the veribench CLI with one DuckDB INSERT made slow, for a Ctrl-C to land in it.

Used by ``tests/cli/test_interrupt.py`` as a child process: ``python slow_insert.py MODE ARGS...``;
MODE ``import`` slows the INSERT of the first batch of documents (inside the import's
transaction, through ``store.sql.arrow_view`` as the write path does), MODE ``score`` the
second batch of scores (the first is committed). ``READY`` on standard error says the
INSERT runs now.
"""
import sys
import threading

from veribench.store import sql, writes

SLOW = ("INSERT INTO {table} ({cols}) SELECT {vals} FROM {view} t, range(1000000000000) r "
        "WHERE r.range + length(t.doc_id) < 0")
mode, args = sys.argv[1], sys.argv[2:]
calls = [0]


def slow_insert(con, table, cols, vals, tbl):
    with sql.arrow_view(con, tbl) as view:
        print("READY", file=sys.stderr, flush=True)
        # DuckDB does not always see a SIGINT while one task runs the whole scan; its own
        # interrupt, from 3 s on, ends the query then (the SIGINT stays pending in Python)
        done = threading.Event()

        def interrupt():
            if not done.wait(3):
                while not done.wait(0.1):
                    con.interrupt()

        threading.Thread(target=interrupt, daemon=True).start()
        try:
            con.execute(SLOW.format(table=table, cols=cols, vals=vals, view=view))
        finally:
            done.set()


if mode == "import":
    real = writes.add_documents

    def add_documents(con, documents, segments=()):
        slow_insert(con, "documents", "doc_id, text_sha256, label", "'x', 'y', 'z'", documents)
        return real(con, documents, segments)

    writes.add_documents = add_documents
else:
    import pyarrow as pa

    real = writes.put_scores

    def put_scores(ws, spec, items, **kw):
        calls[0] += 1
        if calls[0] == 2:
            with ws.transaction() as con:
                slow_insert(con, "scores", "spec_hash, text_sha256, status", "'x', 'y', 'z'",
                            pa.table({"doc_id": ["a"]}))
        return real(ws, spec, items, **kw)

    writes.put_scores = put_scores

from veribench.cli.main import app  # noqa: E402

app(args)
