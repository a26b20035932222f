"""The surrogate shortcut of the JSON readers (``_io.may_hold_surrogates``) never skips a
text whose decoded values hold a surrogate: whenever the full walk (``check_strings``)
refuses a value, the shortcut said the text may hold one."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veribench.corpus.importers._io import check_strings, load_json, may_hold_surrogates, parse_json_text
from veribench.errors import InputError

# any code point, surrogates included (they reach JSON text as escapes or as raw characters)
_chars = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())
_text = st.text(_chars, max_size=12)
_json = st.recursive(st.none() | st.booleans() | st.integers() | _text,
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_text, kids, max_size=4), max_leaves=12)


def _refused(value) -> bool:
    try:
        check_strings(value, file="f", record=0)
    except InputError:
        return True
    return False


@settings(max_examples=400, deadline=None)
@given(_json, st.booleans(), st.booleans())
def test_shortcut_never_misses_a_surrogate(value, ascii_only, upper):
    text = json.dumps(value, ensure_ascii=ascii_only)
    if upper:  # escapes in upper case (\uD800) decode the same
        text = text.replace("\\ud", "\\uD")
    decoded = json.loads(text)
    if _refused(decoded):
        assert may_hold_surrogates(text)


def test_shortcut_cases():
    assert may_hold_surrogates('{"a": "\\ud800"}') and may_hold_surrogates('{"a": "\\uDFFF"}')
    assert may_hold_surrogates('{"a": "\udc80"}')  # a byte read_text could not decode
    assert may_hold_surrogates('{"a": "\\uD83D\\uDE00"}')  # a pair: cleared by the full walk, not skipped
    assert not may_hold_surrogates('{"a": "caf\\u00e9 \u00e9 \\\\ud8"}')


@pytest.mark.parametrize("text,field", [('{"x": {"y": ["ok", "\\ud800"]}}', "x.y[1]"),
                                        ('{"x": {"\\uDFFF": 1}}', "x.<key>")])
def test_lone_surrogate_still_refused(tmp_path, text, field):
    with pytest.raises(InputError) as e:
        parse_json_text(text, file="cell.json", record="line 3")
    assert e.value.field == field and "lone surrogate" in str(e.value)
    p = tmp_path / "a.json"
    p.write_text("[" + text + "]", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_json(p)
    assert e.value.record == 0 and e.value.field == field


def test_escaped_surrogate_in_the_bad_byte_range_is_named_as_a_surrogate(tmp_path):
    """U+DC80..U+DCFF is also where undecodable bytes land (surrogateescape): in a file that
    is valid UTF-8 it can only be a JSON escape, and is reported as a lone surrogate."""
    p = tmp_path / "a.json"
    p.write_text('[{"text": "x \\udc80 y"}]', encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_json(p)
    assert "lone surrogate U+DC80" in str(e.value) and e.value.field == "text"
    with pytest.raises(InputError) as e:
        parse_json_text('{"t": "\\udcff"}', file="cell", record="line 2")
    assert "lone surrogate U+DCFF" in str(e.value)
    p.write_bytes(b'[{"text": "x \xff y"}]')  # a real byte that is not UTF-8
    with pytest.raises(InputError) as e:
        load_json(p)
    assert "not valid UTF-8" in str(e.value)
