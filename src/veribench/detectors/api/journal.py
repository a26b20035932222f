"""Journal of submitted asynchronous vendor tasks, so a killed run never pays twice for one.

Asynchronous vendors (Pangram; the Undetectable, HIX and Humbot humanizers) take a text,
return a task id, and are then polled. The task id is written to the workspace table
``api_tasks`` (keyed by adapter spec hash and text SHA-256) in its own transaction right
after the submit call answers and before polling starts. A run killed while polling
resumes by polling the same task instead of submitting (and paying for) the text again.

The only window left is between the vendor accepting a submit and its answer reaching us
(milliseconds); a kill there can cause one repeat submission.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from veribench.detectors.api.http import CallInfo, VendorError
from veribench.hashing import text_sha256
from veribench.store.workspace import now_utc


class TaskJournal:
    """Task ids of submitted texts, stored in a workspace (thread-safe through the workspace lock)."""

    def __init__(self, ws: Any):
        self.ws = ws

    def get(self, spec_hash: str, sha: str) -> str | None:
        rows = self.ws.query("SELECT task_id FROM api_tasks WHERE spec_hash = ? AND text_sha256 = ?", [spec_hash, sha])
        return rows[0][0] if rows else None

    def put(self, spec_hash: str, sha: str, vendor: str, task_id: str) -> None:

        with self.ws.transaction() as c:
            c.execute("INSERT OR REPLACE INTO api_tasks VALUES (?, ?, ?, ?, ?)",
                      [spec_hash, sha, vendor, str(task_id), now_utc()])

    def drop(self, spec_hash: str, sha: str) -> None:
        with self.ws.transaction() as c:
            c.execute("DELETE FROM api_tasks WHERE spec_hash = ? AND text_sha256 = ?", [spec_hash, sha])


class JournalMixin:
    """For async adapters: ``attach_workspace(ws)`` (called by the scoring/humanizing paths)
    and :meth:`submit_and_poll`, which resumes a journaled task instead of resubmitting."""

    journal: TaskJournal | None = None

    def attach_workspace(self, ws: Any) -> None:
        self.journal = TaskJournal(ws) if ws is not None else None

    def submit_and_poll(self, text: str, info: CallInfo, submit: Callable[[], str],
                        poll_task: Callable[[str], Any]) -> Any:
        """Poll the journaled task for ``text`` if there is one, else ``submit()`` and poll.

        ``poll_task`` raises :class:`VendorError`; a failed task (``site_down``) is dropped
        from the journal so that a later retry submits afresh; an unknown task id (HTTP
        404 or a refusal on the first poll of a journaled task) is resubmitted at once.
        """
        spec_hash = self.spec.hash  # type: ignore[attr-defined]
        sha = text_sha256(text)
        tid = self.journal.get(spec_hash, sha) if self.journal else None
        if tid is not None:
            info.retried_for.append("resumed_task")
            try:
                return self._poll_logged(spec_hash, sha, tid, poll_task)
            except VendorError as e:
                if not (e.http_status == 404 or e.status in ("auth", "refused")):
                    raise
                self.journal.drop(spec_hash, sha)  # type: ignore[union-attr]
        tid = submit()
        if self.journal:
            self.journal.put(spec_hash, sha, self.spec.name, tid)  # type: ignore[attr-defined]
        return self._poll_logged(spec_hash, sha, tid, poll_task)

    def _poll_logged(self, spec_hash: str, sha: str, tid: str, poll_task: Callable[[str], Any]) -> Any:
        try:
            return poll_task(tid)
        except VendorError as e:
            if getattr(e, "task_failed", False) and self.journal:  # the vendor says the task failed
                self.journal.drop(spec_hash, sha)
            raise
