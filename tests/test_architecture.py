"""The shape of the code (docs/architecture.md): layers without circles, one logged write
path, one schema per store.

These tests read the source (every ``import`` statement, those inside functions included,
and every SQL string), so they hold for code paths no other test runs.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from veribench.store import schema

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = SRC / "veribench"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _resolve(mod: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    pkg = mod.split(".") if MODULES[mod].name == "__init__.py" else mod.split(".")[:-1]
    base = pkg[: len(pkg) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(mod: str) -> list[tuple[str, int, bool]]:
    """``(imported veribench module, line, inside a function)`` for every import statement."""
    tree = ast.parse(MODULES[mod].read_text(encoding="utf-8"))
    in_fn: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_fn.update(id(c) for c in ast.walk(n) if isinstance(c, (ast.Import, ast.ImportFrom)))
    out = []
    for n in ast.walk(tree):
        targets: list[str] = []
        if isinstance(n, ast.ImportFrom):
            base = _resolve(mod, n)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in n.names]
        elif isinstance(n, ast.Import):
            targets = [a.name for a in n.names]
        for t in targets:
            if not t.startswith("veribench"):
                continue
            while t not in MODULES and "." in t:
                t = t.rsplit(".", 1)[0]
            out.append((t, n.lineno, id(n) in in_fn))
    return out


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), or a self-import."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_circle():
    """Every import statement of every module, inside functions too: no circle."""
    edges = {m: {t for t, _, _ in _imports(m) if t != m} for m in MODULES}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_veribench_import_hides_inside_a_function():
    """The rule has no exception: a veribench import inside a function is how the old
    nine-module circle loaded. (Optional third-party packages stay lazy; they are not
    veribench's.)"""
    found = [f"{MODULES[m].relative_to(REPO)}:{line} imports {t}" for m in MODULES
             for t, line, inner in _imports(m) if inner]
    assert found == []


def test_import_linter_contracts_hold():
    """The layers contract and the pure-models contract of pyproject.toml (`lint-imports`,
    also run by .ci/run)."""
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.skip("import-linter is not installed (pip install '.[dev]')")
    env = {"PYTHONPATH": str(SRC), "PATH": str(exe.parent), "HOME": str(REPO)}
    r = subprocess.run([str(exe), "--no-cache"], cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


# -- SQL writes and table definitions --------------------------------------------------------

#: ``INSERT [OR ...] INTO t``, ``UPDATE t``, ``DELETE FROM t``, ``CREATE TABLE [IF NOT EXISTS] t``
#: in any string of the source (f-strings included: their literal parts are kept).
_WRITE = re.compile(r"\b(?:INSERT(?:\s+OR\s+(?:IGNORE|REPLACE))?\s+INTO|UPDATE|DELETE\s+FROM)\s+([A-Za-z_][\w]*)",
                    re.I)
_CREATE = re.compile(r"\bCREATE\s+(?:TEMP(?:ORARY)?\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_{][\w{}]*)", re.I)
#: Helpers that write a table named by an argument: ``insert_arrow(con, "t", ...)``,
#: ``insert_rows(con, verb, "t", ...)``.
_HELPERS = {"insert_arrow": 1, "insert_rows": 2}


def _strings(tree: ast.AST) -> list[tuple[str, int]]:
    """Every string of the code (an f-string once, its literal parts joined), docstrings left out."""
    skip: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.JoinedStr):
            skip.update(id(v) for v in n.values)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body and \
                isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant):
            skip.add(id(n.body[0].value))
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip:
            out.append((n.value, n.lineno))
        elif isinstance(n, ast.JoinedStr):
            out.append(("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in n.values), n.lineno))
    return out


def _sql_writes(path: Path) -> list[tuple[str, str, int]]:
    """``(verb, table, line)`` of every SQL write and every CREATE TABLE in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for s, line in _strings(tree):
        # a docstring or message naming a verb in prose is not SQL: SQL verbs are upper case here
        for m in _WRITE.finditer(s):
            if m.group(0).split()[0].isupper():
                out.append(("write", m.group(1).lower(), line))
        for m in _CREATE.finditer(s):
            if m.group(0).split()[0].isupper():
                out.append(("create", m.group(1).lower(), line))
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)
            pos = _HELPERS.get(name or "")
            if pos is not None and len(n.args) > pos and isinstance(n.args[pos], ast.Constant):
                out.append(("write", str(n.args[pos].value).lower(), n.lineno))
    return out


#: The modules allowed to write logged tables, and which: the write path; the event log
#: (appended by the write path); migrations (one transaction bringing old rows forward).
_LOG_WRITERS = {
    "veribench/store/writes.py": set(schema.LOGGED_TABLES) - {"events", "log_items", "replaced_leaves"},
    "veribench/store/events.py": {"events", "log_items", "replaced_leaves"},
    "veribench/store/migrations.py": {"events", "log_items"},
    "veribench/store/schema.py": {"schema_meta"},
    # the bundle verifier's private in-memory snapshot (not a workspace)
    "veribench/store/snapshot.py": set(schema.SNAPSHOT_TABLES),
}
_SCHEMA_MODULES = {"veribench/store/schema.py", "veribench/rubric/schema.py", "veribench/rubric/write/schema.py"}


def test_only_the_write_path_writes_logged_tables():
    """No INSERT, UPDATE or DELETE on a logged table outside the write path of store/."""
    logged = set(schema.LOGGED_TABLES) | {"schema_meta"}
    bad = []
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(SRC).as_posix()
        allowed = _LOG_WRITERS.get(rel, set())
        for verb, table, line in _sql_writes(p):
            if verb == "write" and table in logged and table not in allowed:
                bad.append(f"{rel}:{line} writes {table}")
    assert bad == []


def test_create_table_only_in_schema_modules():
    bad = [f"{p.relative_to(SRC).as_posix()}:{line} creates {table}" for p in sorted(PACKAGE.rglob("*.py"))
           for verb, table, line in _sql_writes(p)
           if verb == "create" and p.relative_to(SRC).as_posix() not in _SCHEMA_MODULES and table != "_sel"]
    assert bad == []


def test_the_sql_reader_sees_writes_in_every_form(tmp_path):
    """The two tests above would miss nothing: plain, f-string, helper and prose forms."""
    f = tmp_path / "m.py"
    f.write_text('def f(con, t):\n'
                 '    con.execute("INSERT OR IGNORE INTO scores VALUES (?)")\n'
                 '    con.execute(f"UPDATE documents SET {t} = ?")\n'
                 '    insert_arrow(con, "runs", t)\n'
                 '    insert_rows(con, "INSERT", "submissions", [], [])\n'
                 '    con.execute("CREATE TABLE IF NOT EXISTS foo (a INT)")\n'
                 '    """Documents are deleted from the table when withdrawn."""\n')
    got = sorted(_sql_writes(f))
    assert got == [("create", "foo", 6), ("write", "documents", 3), ("write", "runs", 4), ("write", "scores", 2),
                   ("write", "submissions", 5)]
    f.write_text('"""CREATE TABLE IF NOT EXISTS ... in a docstring is prose."""\n')
    assert _sql_writes(f) == []


def test_every_workspace_table_is_in_the_schema_and_in_one_role():
    assert set(schema.LOGGED_TABLES).isdisjoint(schema.WORKING_TABLES)
    assert set(schema.TABLES) == set(schema.LOGGED_TABLES) | set(schema.WORKING_TABLES) | {"schema_meta"}
    assert set(schema.SNAPSHOT_TABLES) <= set(schema.LOGGED_TABLES)
