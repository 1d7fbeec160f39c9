"""The one place where what went wrong becomes a line on stderr and an exit code: the
library's errors carry theirs (1; 2 for a usage error found in the data, or a missing
extra), an OSError is 1, an interrupt 128 + its signal's number (130: Ctrl-C, 143: SIGTERM)."""

from __future__ import annotations

import re
from typing import Any

import click

from ..errors import TfrConvertError, signal_number

# Line breaks and other control characters, as a file name from the data may hold them:
# one error is one line on stderr, never a second, forged `error:` line.
_CONTROL = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")


def one_line(message: str) -> str:
    """`message` with each control character written as its escape (`\\n`)."""
    return _CONTROL.sub(lambda m: repr(m[0])[1:-1], message)


class Translating:
    """Turns the library's errors into one line on stderr and their exit code (1; 2 for a
    missing optional dependency)."""

    def invoke(self, ctx: click.Context) -> Any:
        code = 1
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except TfrConvertError as e:
            message, code = str(e) + (f" ({e.hint})" if e.hint else ""), e.exit_code
        except OSError as e:
            message = f"{e.filename}: {e.strerror}" if e.filename else str(e)
        except KeyboardInterrupt as e:
            message, code = "interrupted", 128 + signal_number(e)
        from ..storage.fs import with_remote_names  # a remote source's local copy is named as the source

        click.echo(f"error: {one_line(with_remote_names(message))}", err=True)
        ctx.exit(code)


class Group(Translating, click.Group):
    pass


class Command(Translating, click.Command):
    pass
