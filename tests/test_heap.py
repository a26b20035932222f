"""``veribench.heap``: a freeze is undone only by whoever made it."""

import gc

from veribench.heap import CollectionPause, frozen


def test_frozen_unfreezes_only_its_own_freeze():
    gc.unfreeze()
    with frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    gc.freeze()  # a caller's freeze
    try:
        n = gc.get_freeze_count()
        with frozen():
            pass
        assert gc.get_freeze_count() >= n  # not undone by the callee
    finally:
        gc.unfreeze()


def test_pause_then_frozen_inside_keeps_the_pause_freeze():
    gc.unfreeze()
    p = CollectionPause()
    try:
        p.resume()
        n = gc.get_freeze_count()
        assert n > 0 and gc.isenabled()
        with frozen():
            pass
        assert gc.get_freeze_count() >= n
    finally:
        p.end()
    assert gc.isenabled() and gc.get_freeze_count() == 0
