"""A JSON document whose top level is an object, read member by member, the arrays
named by the caller one element at a time.

`json.loads` builds the whole document before anything can be done with it: a COCO
file of a million annotations is a million dicts at once, several times the file's
size. Here the standard library's decoder parses one element at a time
(`JSONDecoder.raw_decode` at an offset) and hands it on; only what the caller keeps
stays. Errors are the decoder's own `JSONDecodeError`, with positions in the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

_SPACE = re.compile(r"[ \t\n\r]*")


class _Reader:
    def __init__(self, text: str, parse_int: Callable[[str], Any]) -> None:
        self.text, self.at = text, 0
        self.decoder = json.JSONDecoder(parse_int=parse_int)

    def skip(self) -> str:
        """The next character after white space ('' at the end), not consumed."""
        self.at = _SPACE.match(self.text, self.at).end()  # type: ignore[union-attr]
        return self.text[self.at : self.at + 1]

    def expect(self, char: str, what: str) -> None:
        if self.skip() != char:
            raise json.JSONDecodeError(f"Expecting {what}", self.text, self.at)
        self.at += 1

    def value(self) -> Any:
        self.skip()
        value, self.at = self.decoder.raw_decode(self.text, self.at)
        return value

    def elements(self) -> Iterator[Any]:
        """The elements of the array starting here, each parsed when asked for."""
        self.expect("[", "'['")
        if self.skip() == "]":
            self.at += 1
            return
        while True:
            yield self.value()
            if self.skip() == "]":
                self.at += 1
                return
            self.expect(",", "',' delimiter")


def read_object(
    text: str, streamed: dict[str, Callable[[Iterator[Any]], None]], parse_int: Callable[[str], Any] = int
) -> dict[str, Any]:
    """The members of the top-level object of `text`, but for those named in `streamed`
    whose value is an array: their elements go, one at a time and in order, to the
    function given for the name (which must consume them all). None if the top level is
    not an object. A member named twice raises JSONDecodeError."""
    reader = _Reader(text, parse_int)
    if reader.skip() != "{":
        reader.value()  # a document of another kind: parsed, to name an error in it
        return None  # type: ignore[return-value]
    reader.at += 1
    members: dict[str, Any] = {}
    seen: set[str] = set()
    if reader.skip() == "}":
        reader.at += 1
    else:
        while True:
            if reader.skip() != '"':
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, reader.at)
            at = reader.at
            name = reader.value()
            if name in seen:
                raise json.JSONDecodeError(f"member {name!r} appears twice", text, at)
            seen.add(name)
            reader.expect(":", "':' delimiter")
            if name in streamed and reader.skip() == "[":
                streamed[name](reader.elements())
            else:
                members[name] = reader.value()
            if reader.skip() == "}":
                reader.at += 1
                break
            reader.expect(",", "',' delimiter")
    if reader.skip():
        raise json.JSONDecodeError("Extra data", text, reader.at)
    return members
