"""Report site on a one-million-document workspace (issue 7): `python benchmarks/bench_report.py [N]`.

Builds a workspace of N documents (default 1,000,000; half human, writer tags native /
non-native, three subgroups) scored by two detectors, entirely in DuckDB SQL, evaluates
it with ``veribench.evaluate`` and times ``veribench report`` on it, step by step.
The report aggregates: its pages must stay small however many documents there are.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from veribench.spec import Spec  # noqa: E402
from veribench.store import Workspace, writes  # noqa: E402


def build_workspace(path: Path, n: int) -> None:
    specs = [Spec("detector", "BenchA", "1", {}), Spec("detector", "BenchB", "2", {"mode": "strict"})]
    with Workspace(path) as ws:
        with ws.transaction() as c:
            c.execute("SELECT setseed(0.42)")
            c.execute(
                """INSERT INTO documents
                   SELECT 'd' || lpad(i::VARCHAR, 8, '0'), 'bench', NULL, sha256('text ' || i),
                          CASE WHEN i % 2 = 0 THEN 'human' ELSE 'ai' END, CASE WHEN i % 2 = 0 THEN 'A' ELSE 'C' END,
                          'essay', 'set' || (i % 3)::VARCHAR,
                          CASE WHEN i % 5 = 0 THEN '{"writer": "non-native"}' ELSE '{"writer": "native"}' END,
                          'g' || (i // 2)::VARCHAR, NULL, NULL, NULL
                   FROM range(?) t(i)""",
                [n],
            )
            for k, s in enumerate(specs):
                writes.put_spec(c, s)
                c.execute(
                    """INSERT INTO scores
                       SELECT ?, sha256('text ' || i), 'ok', p, 'probability', 'higher_ai', p, NULL, ?, NULL, now()
                       FROM (SELECT i, greatest(0, least(1, 0.3 + 0.3 * (i % 2) + 0.1 * (i % 5 = 0)::INT
                                                      + (random() - 0.5) * ?)) AS p FROM range(?) t(i))""",
                    [s.hash, s.version, 0.8 + 0.2 * k, n],
                )
                c.execute("INSERT INTO submissions SELECT 'd' || lpad(i::VARCHAR, 8, '0'), ?, sha256('text ' || i) "
                          "FROM range(?) t(i)", [s.hash, n])


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    import dataclasses

    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import Protocol
    from veribench.report.site import build_report

    with tempfile.TemporaryDirectory() as tmp:
        ws_dir, out = Path(tmp) / "ws", Path(tmp) / "site"
        t = time.perf_counter()
        build_workspace(ws_dir, n)
        t_fill = time.perf_counter() - t
        t = time.perf_counter()
        with Workspace(ws_dir) as ws:
            evaluate_workspace(ws, dataclasses.replace(Protocol.default(), slices=("subgroup", "arm", "tag:writer")))
        t_eval = time.perf_counter() - t
        steps: list[tuple[float, str]] = []
        t = time.perf_counter()
        res = build_report([ws_dir], out, progress=lambda m: steps.append((time.perf_counter(), m)))
        t_rep = time.perf_counter() - t
        print(f"documents: {n:,}  detectors: 2  (rows in the raw export: {2 * n:,})")
        print(f"fill workspace (SQL): {t_fill:.1f} s   evaluate: {t_eval:.1f} s")
        print(f"veribench report: {t_rep:.1f} s total, {len(res.pages)} pages, {res.figures} charts")
        prev = t
        for ts, m in steps:
            print(f"  {ts - prev:6.1f} s before: {m}")
            prev = ts
        print(f"  {t + t_rep - prev:6.1f} s charts + pages")
        for f in sorted(out.rglob("*")):
            if f.is_file() and f.suffix in (".html", ".json", ".csv", ".parquet"):
                print(f"  {f.relative_to(out)}: {f.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
