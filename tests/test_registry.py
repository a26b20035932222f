"""registry.create: a setting the factory does not take is named with "did you mean" (one
helper, veribench.errors.unknown_key), not Python's "unexpected keyword argument"."""

from __future__ import annotations

import pytest

from veribench import registry
from veribench.errors import SettingError, close_matches, did_you_mean, unknown_key


@pytest.mark.parametrize(("kind", "name", "key", "suggestion"), [
    ("detector", "loglik", "modle", "model"),            # a factory passing **settings on to its class
    ("detector", "binoculars", "observr", "observer"),   # a class with its own __init__
    ("detector", "zippy", "chunk_sise", "chunk_size"),
    ("detector", "hf-classifier", "threshhold", "threshold"),
    ("humanizer", "manual", "pth", "path"),
])
def test_unknown_setting_names_the_closest(kind, name, key, suggestion):
    with pytest.raises(SettingError) as e:
        registry.create(kind, name, {key: 1})
    msg = str(e.value)
    assert msg.startswith(f"unknown setting {key!r} of {kind} {name!r} (did you mean {suggestion!r}?"), msg
    assert "unexpected keyword" not in msg and "known: " in msg


def test_the_shared_detector_setting_is_known():
    with pytest.raises(SettingError, match="did you mean 'canonicalize'"):
        registry.create("detector", "zippy", {"canonicalise": "none"})


def test_settings_of_follows_kwargs_into_the_class():
    names = {p.name for p in registry.settings_of(registry.get("detector", "loglik").__wrapped__)[0]}
    assert {"model", "max_tokens", "device", "dtype"} <= names and "statistic" not in names


def test_the_one_matcher():
    assert set(close_matches("Modle", ["model", "mode", "device"])) == {"model", "mode"}  # any case
    assert did_you_mean("xyz", ["model"]) == ""
    assert unknown_key("field", "subgrup", ["subgroup", "label"], "a document") == (
        "unknown field 'subgrup' of a document (did you mean 'subgroup'? known: label, subgroup)")
