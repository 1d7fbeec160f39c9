"""tfr_convert.write(): data held in Python converted as `tfr-convert table` converts a file.

The data becomes Arrow tables in memory (a pandas DataFrame as `to_parquet` would store
it, a pyarrow Table or RecordBatchReader, a Hugging Face Dataset or DatasetDict with
its features, or dicts whose schema pyarrow infers from the rows, or `features` gives);
the options are the command line's long options in snake_case, parsed by the `table`
command itself, so they are checked and defaulted exactly as on the command line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import OptionError, TfrConvertError

_SOURCE = "(python data)"  # the command's SRC, unused: the tables are handed over in its context


def write(data: Any, out: str, **options: Any) -> dict[str, Any]:
    """Convert `data` into a dataset at `out`; the run's summary as `--json` gives it.
    Raises TfrConvertError (OptionError for an option that cannot be right)."""
    import click

    from .cli.commands import table
    from .converters.table_files import FromPython

    given = FromPython(_opened(data, options.pop("features", None)))
    argv = [_SOURCE, "--out", str(out), *_argv(table.command, options)]
    try:
        with table.command.make_context("tfr_convert.write", argv, obj=given) as ctx:
            table.command.invoke(ctx)
    except click.UsageError as e:
        raise OptionError(e.format_message()) from None
    except click.exceptions.Exit as e:  # --help and the like: nothing to convert
        raise OptionError(f"write() converts data; option asked for exit {e.exit_code}") from None
    summary = given.summary
    return summary if isinstance(summary, dict) else summary.to_dict()


def _argv(command: Any, options: Mapping[str, Any]) -> list[str]:
    """Keyword options as the command line's: `shard_size="64MB"` -> `--shard-size 64MB`."""
    import click

    by_name: dict[str, click.Option] = {}
    for param in command.params:
        if isinstance(param, click.Option):
            by_name[param.name] = param  # type: ignore[index]
            for opt in param.opts:
                by_name.setdefault(opt.lstrip("-").replace("-", "_"), param)
    argv: list[str] = []
    for name, value in options.items():
        param = by_name.get(name)
        if param is None or name in ("out", "src"):
            raise OptionError(f"write() has no option {name!r} (the command line's long options, in snake_case)")
        flag = max(param.opts, key=len)
        if param.is_flag:
            if value:
                argv.append(flag)
            elif param.secondary_opts:
                argv.append(max(param.secondary_opts, key=len))
            continue
        if value is None:
            continue
        if param.multiple and isinstance(value, Mapping):  # rename={"old": "new"}
            values = [f"{old}={new}" for old, new in value.items()]
        elif param.multiple and not isinstance(value, str):
            values = list(value)
        else:
            values = [value]
        for one in values:
            argv += [flag, _text(one)]
    return argv


def _text(value: Any) -> str:
    if isinstance(value, Mapping):  # split={"train": 0.8, "test": 0.2}
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, (list, tuple)):  # columns=["a", "b"]
        return ",".join(map(str, value))
    return str(value)


def _opened(data: Any, features: Any) -> Any:
    """The data's Arrow tables (and a Hugging Face dataset's features)."""
    from .converters.table_files import in_memory
    from .optional import pyarrow

    pa = pyarrow("tfr_convert.write()")
    kind = type(data).__module__.split(".")[0] + "." + type(data).__name__
    if kind == "pandas.DataFrame":
        return in_memory([(None, pa.Table.from_pandas(data))], "DataFrame")
    if isinstance(data, pa.Table):
        return in_memory([(None, data)], "Table")
    if isinstance(data, pa.RecordBatchReader):
        return in_memory([(None, data.read_all())], "RecordBatchReader")
    if kind == "datasets.DatasetDict":
        tables = [(split, _hf_table(d)) for split, d in data.items()]
        first = next(iter(data.values()), None)
        return in_memory(tables, "DatasetDict", first.features.to_dict() if first is not None else {})
    if kind == "datasets.Dataset":
        return in_memory([(None, _hf_table(data))], "Dataset", data.features.to_dict())
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping)):
        rows = list(data)
        if not rows or not all(isinstance(r, Mapping) for r in rows):
            raise OptionError("write() takes a DataFrame, a pyarrow Table or reader, a Hugging Face dataset, or dicts")
        schema = pa.schema(features) if isinstance(features, Mapping) else features
        try:
            return in_memory([(None, pa.Table.from_pylist(rows, schema=schema))], "rows")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise TfrConvertError(f"the rows do not form one table: {e} (give features= their types)") from None
    raise OptionError(
        f"write() cannot convert a {kind}: give a DataFrame, a pyarrow Table, a Hugging Face dataset or dicts"
    )


def _hf_table(dataset: Any) -> Any:
    """A Hugging Face Dataset's rows as one Arrow table, in the order it shows them."""
    if getattr(dataset, "_indices", None) is not None:  # selected or shuffled: the rows it shows, in order
        dataset = dataset.flatten_indices()
    return dataset.data.table
