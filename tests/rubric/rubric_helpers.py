"""Helpers shared by the rubric tests (imported by name: tests/ has no packages)."""

from __future__ import annotations

import re
import socket
import threading
import time

HTML = {"accept": "text/html"}


def hidden(html: str, name: str) -> str:
    """The value of the hidden form field ``name`` on a page."""
    m = re.search(rf'name="{name}" value="([^"]+)"', html)
    assert m, name
    return m.group(1)


def login(client, token: str, root: str = "") -> None:
    """Sign in through the login form (CSRF token from the page), as a browser would."""
    r = client.get(f"{root}/login", headers=HTML)
    r = client.post(f"{root}/login", data={"token": token, "csrf_token": hidden(r.text, "csrf_token")},
                    headers=HTML, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"{root}/assignments", r.text

def real_pairs(tests: list[dict], plan: list[tuple[str, int]]):
    """Pairs from real cycle records: ``plan`` lists (tool, how many), taken in id order."""
    from veribench.rubric.store import Pair

    out = []
    for tool, n in plan:
        recs = sorted((t for t in tests if t["humanizer_slug"] == tool), key=lambda t: t["id"])[:n]
        assert len(recs) == n
        out += [Pair(pair_key=f"test:{t['id']}", tool=tool, input_text=t["input_text"], output_text=t["output_text"],
                     source="cycle:July 2026", pair_id=t["id"], sample_id=t["sample_id"]) for t in recs]
    return out


def tool_variants(tools) -> list[str]:
    """Every spelling of each tool name that a page could carry."""
    out = set()
    for t in tools:
        t = t.lower()
        out |= {t, t.replace("-", " "), t.replace("-", ""), t.replace("-", "_")}
    return sorted(out)


def words(text: str) -> int:
    """Independent word count: whitespace tokens holding a letter or digit."""
    return sum(1 for tok in text.split() if any(ch.isalnum() for ch in tok))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerThread:
    """uvicorn serving an app on 127.0.0.1 in a thread; ``stop()`` shuts it down fully."""

    def __init__(self, app, port: int | None = None):
        import uvicorn

        self.port = port or free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        self.thread.start()
        t0 = time.time()
        while not self.server.started:
            if time.time() - t0 > 20 or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        assert not self.thread.is_alive()
