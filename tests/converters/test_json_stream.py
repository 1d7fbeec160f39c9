"""The COCO reader's JSON: the top-level object member by member, large arrays element
by element (converters/annotations/box_formats/json_stream.py), against json.loads."""

from __future__ import annotations

import json

import pytest

from tfr_convert.converters.annotations.box_formats.json_stream import read_object

DOC = {"info": {"year": 2017}, "images": [{"id": 1}, {"id": 2}], "annotations": [], "categories": [[1, "a"]]}


def streamed(text: str) -> tuple[dict, dict]:
    seen: dict[str, list] = {}

    def keep(name):
        return lambda elements: seen.setdefault(name, []).extend(elements)

    return read_object(text, {"images": keep("images"), "annotations": keep("annotations")}), seen


@pytest.mark.parametrize("indent", [None, 2])
def test_members_and_streamed_elements_are_what_json_loads_gives(indent):
    members, seen = streamed(json.dumps(DOC, indent=indent))
    assert members == {"info": {"year": 2017}, "categories": [[1, "a"]]}
    assert seen == {"images": [{"id": 1}, {"id": 2}], "annotations": []}


def test_a_streamed_name_whose_value_is_no_array_is_an_ordinary_member():
    members, seen = streamed('{"images": {"id": 1}, "annotations": null}')
    assert members == {"images": {"id": 1}, "annotations": None} and seen == {}


def test_a_top_level_that_is_no_object_gives_none():
    assert streamed("[1, 2]")[0] is None


@pytest.mark.parametrize(
    "text",
    [
        '{"images": [{"id": 1},, {"id": 2}]}',
        '{"a": 1 "b": 2}',
        '{"images": [1, 2}',
        '{"a": 1} x',
        "{a: 1}",
        '{"images": [1, 2], "a": tru}',
    ],
)
def test_errors_name_the_line_and_column_json_loads_names(text):
    with pytest.raises(json.JSONDecodeError) as ours:
        streamed(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert (ours.value.lineno, ours.value.colno) == (theirs.value.lineno, theirs.value.colno)


def test_a_member_named_twice_is_refused_where_it_appears_again():
    with pytest.raises(json.JSONDecodeError, match="member 'images' appears twice") as caught:
        streamed('{"images": [], "images": [1]}')
    assert caught.value.pos == 15
