"""``--engine ray``: score through Ray Data, one actor per GPU (or CPU) slot.

:class:`RayDetector` wraps a registry detector (name + settings) behind the ordinary
:class:`~veribench.detectors.base.Detector` protocol and carries the *same spec*, so
it goes through :func:`veribench.detectors.pipeline.score_texts` unchanged: the driver
looks up the workspace cache, sends only the texts that are missing to the cluster,
and stores every returned result. Each actor builds the detector once (loading the
model once) and scores batches; results come back in input order.

Point it at a cluster with ``--ray-address ray://head:10001`` (or ``RAY_ADDRESS``);
without one, a local Ray instance is started. See ``docs/ray.md``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence
from typing import Any

from veribench.errors import VeribenchError
from veribench.records import ScoreResult
from veribench.registry import create
from veribench.spec import Spec


def _result_from_json(s: str) -> ScoreResult:
    return ScoreResult(**json.loads(s))


class _Scorer:
    """Ray Data actor: builds the detector once, scores each batch of rows."""

    def __init__(self, name: str, settings: dict[str, Any], threads: int | None = None):
        if threads:
            try:
                import torch

                torch.set_num_threads(threads)
            except ImportError:  # a detector that needs no torch
                pass

        self.det = create("detector", name, settings)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        texts = [str(t) for t in batch["text"]]
        res = self.det.score_batch(texts)
        return {"i": list(batch["i"]),
                "result": [json.dumps(dataclasses.asdict(r), allow_nan=False) for r in res]}


class RayDetector:
    """A registry detector run on Ray Data actors, with the wrapped detector's spec.

    Args:
        name: registry name of the detector (e.g. ``"loglik"``).
        settings: its settings, exactly as for a local run.
        address: Ray address (``"auto"``, ``"ray://host:10001"``); ``None`` uses
            ``RAY_ADDRESS`` or starts a local instance.
        spec: the wrapped detector's spec (built locally if not given; no model is loaded).
        actor_batch: texts per actor call.
        init_kwargs: extra ``ray.init`` arguments when this class starts Ray (e.g. ``num_cpus``).
    """

    #: Texts per pipeline batch: one Ray Data job per this many missing texts (stored when it ends).
    batch_size = 4096

    def __init__(self, name: str, settings: dict[str, Any], *, address: str | None = None,
                 spec: Spec | None = None, actor_batch: int = 64, init_kwargs: dict[str, Any] | None = None):
        self.name, self.settings = name, dict(settings)
        self.address = address
        self.actor_batch = int(actor_batch)
        self.init_kwargs = dict(init_kwargs or {})
        if spec is None:

            spec = create("detector", name, self.settings).spec
        self.spec = spec

    def _ray(self):
        try:
            import ray
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise VeribenchError("--engine ray needs Ray Data: pip install 'veribench[ray]'") from e
        if not ray.is_initialized():
            addr = self.address or os.environ.get("RAY_ADDRESS")
            ray.init(address=addr, ignore_reinit_error=True, log_to_driver=False, **self.init_kwargs)
        return ray

    def slots(self) -> tuple[int, dict[str, Any]]:
        """(number of actors, per-actor resources): one per GPU if the cluster has GPUs, else per CPU."""
        ray = self._ray()
        res = ray.cluster_resources()
        gpus = int(res.get("GPU", 0))
        if gpus > 0:
            return gpus, {"num_gpus": 1}
        return max(1, int(res.get("CPU", 1))), {"num_cpus": 1}

    def score_batch(self, texts: Sequence[str]) -> list[ScoreResult]:
        if not texts:
            return []
        ray = self._ray()
        n_slots, resources = self.slots()
        n_actors = max(1, min(n_slots, math.ceil(len(texts) / self.actor_batch)))
        settings = dict(self.settings)
        if "num_gpus" in resources:
            settings.setdefault("device", "cuda")
        ds = ray.data.from_items([{"i": i, "text": t} for i, t in enumerate(texts)],
                                 override_num_blocks=max(1, math.ceil(len(texts) / self.actor_batch)))
        out = ds.map_batches(
            _Scorer,
            fn_constructor_kwargs={"name": self.name, "settings": settings,
                                   "threads": 1 if "num_cpus" in resources else None},
            batch_size=self.actor_batch, concurrency=n_actors, batch_format="numpy", **resources,
        ).take_all()
        got = {int(r["i"]): _result_from_json(str(r["result"])) for r in out}
        if len(got) != len(texts):
            raise RuntimeError(f"ray engine returned {len(got)} results for {len(texts)} texts")
        return [got[i] for i in range(len(texts))]
