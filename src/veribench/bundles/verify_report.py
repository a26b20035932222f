"""The verifier's report of one detector-run bundle: the checks, in order
(:data:`CHECKS`, each described in :mod:`veribench.bundles.verify`), and
:class:`BundleReport`, the outcome: which checks passed (``ok``, ``note``, ``none``),
every failure as a :class:`~veribench.bundles.findings.Finding` naming its check, file,
field, expected and got, notes and counts. A bundle passes only when every check ran
and none failed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veribench.bundles.findings import Finding

#: The checks of a detector-run bundle, in the order they run and are reported.
CHECKS = ("reader", "manifest", "chain", "commitment", "amendments", "corpus", "scores", "timing", "split", "results",
          "tables", "timestamp")
#: At most this many further failures are printed, and scan batches named, per bundle (the
#: rest are in the --json report).
MAX_LISTED = 20


@dataclass
class BundleReport:
    """The outcome for one detector-run bundle."""

    path: str
    tag: str | None = None
    run_id: str | None = None
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No check failed and every check ran: a bundle is accepted only when each of
        :data:`CHECKS` passed (a check that could not run is never a pass)."""
        return not self.failures and all(c in self.checks for c in CHECKS)

    def not_run(self) -> list[str]:
        """The checks of :data:`CHECKS` that neither passed nor failed (in check order)."""
        return [c for c in CHECKS if c not in self.checks and not any(f.check == c for f in self.failures)]

    def not_run_reason(self) -> str:
        """Why a check of :meth:`not_run` did not run: the verifier stops at a failure that
        leaves nothing for the later checks to read."""
        if self.failures:
            return f"skipped: an earlier check failed ({self.failures[0].check}), so this one had nothing to check"
        return "skipped: the verification stopped before this check"

    def status(self, check: str) -> str:
        if any(f.check == check for f in self.failures):
            return "FAIL"
        return self.checks.get(check, {}).get("status", "not run")

    def lines(self) -> list[str]:
        """``[ok] TAG: ...`` or ``[FAIL] TAG: first failure``, then one line per check."""
        name = self.tag or Path(self.path).name
        if self.ok:
            head = (f"[ok] {name} (run {self.run_id}): {len(CHECKS)} checks passed; "
                    f"{self.counts.get('documents', 0):,} documents, {self.counts.get('score_rows', 0):,} scores "
                    "re-derived")
        elif self.failures:
            head = f"[FAIL] {name}: {self.failures[0].line()}"
        else:
            head = f"[FAIL] {name}: checks that did not run: {', '.join(self.not_run())}"
        out = [head]
        for c in CHECKS:
            st = self.status(c)
            detail = self.checks.get(c, {}).get("detail", "")
            fails = [f for f in self.failures if f.check == c]
            if fails:
                detail = fails[0].line()[len(c) + 2:] + (f" (+{len(fails) - 1} more)" if len(fails) > 1 else "")
            elif st == "not run":
                detail = self.not_run_reason()
            out.append(f"    {st:<8} {c}: {detail}".rstrip())
        shown = {id(f) for c in CHECKS for f in [next((x for x in self.failures if x.check == c), None)] if f}
        rest = [f for f in self.failures if id(f) not in shown]
        out += [f"    {f.line()}" for f in rest[:MAX_LISTED]]
        if len(rest) > MAX_LISTED:
            out.append(f"    … {len(rest) - MAX_LISTED} more failures in the --json report")
        out += [f"    note: {n}" for n in self.notes]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "detector-run", "path": self.path, "tag": self.tag, "run_id": self.run_id, "ok": self.ok,
                "checks": {c: {"status": self.status(c), **{k: v for k, v in self.checks.get(c, {}).items()
                                                             if k != "status"},
                               **({"reason": self.not_run_reason()} if self.status(c) == "not run" else {})}
                           for c in CHECKS},
                "counts": self.counts, "failures": [asdict(f) for f in self.failures], "notes": self.notes}
