"""The one place where what went wrong becomes a line on stderr and an exit code: the
library's errors carry theirs (1; 2 for a usage error found in the data, or a missing
extra), an OSError is 1, an interrupt 128 + its signal's number (130: Ctrl-C, 143: SIGTERM)."""

from __future__ import annotations

from typing import Any

import click

from ..errors import TfrConvertError, signal_number


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

        click.echo(f"error: {with_remote_names(message)}", err=True)
        ctx.exit(code)


class Group(Translating, click.Group):
    pass


class Command(Translating, click.Command):
    pass
