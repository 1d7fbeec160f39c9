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

from .errors import OptionError, SourceError, shown

_SOURCE = "(python data)"  # the command's SRC, unused: the tables are handed over in its context


def write(data: Any, out: str, **options: Any) -> dict[str, Any]:
    """Convert `data` into a dataset at `out`; the run's summary as `--json` gives it.
    Raises TfrConvertError (OptionError for an option that cannot be right)."""
    import click

    from .cli.commands import table
    from .converters.table.files import FromPython

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
    from .converters.table.files import in_memory
    from .optional import pyarrow

    pa = pyarrow("tfr_convert.write()")
    kind = type(data).__module__.split(".")[0] + "." + type(data).__name__
    if kind == "pandas.DataFrame":
        try:
            return in_memory([(None, pa.Table.from_pandas(data))], "DataFrame")
        except (pa.ArrowException, OverflowError) as e:
            columns = {str(name): data[name].tolist() for name in data.columns if data[name].dtype == object}
            raise _unconvertible("the DataFrame", columns, e) from None
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
        if not rows:
            raise SourceError("write() was given no rows (an empty sequence): there is nothing to convert")
        odd = next((i for i, r in enumerate(rows) if not isinstance(r, Mapping)), None)
        if odd is not None:
            raise OptionError(
                f"write() was given rows that are not all dicts (row {odd}: {type(rows[odd]).__name__}): "
                "give a DataFrame, a pyarrow Table or reader, a Hugging Face dataset, or dicts"
            )
        schema = pa.schema(features) if isinstance(features, Mapping) else features
        try:
            return in_memory([(None, pa.Table.from_pylist(rows, schema=schema))], "rows")
        except (pa.ArrowException, OverflowError) as e:
            names = dict.fromkeys(str(k) for r in rows for k in r)
            columns = {name: [r.get(name) for r in rows] for name in names}
            raise _unconvertible("the rows", columns, e, " (give features= their types)") from None
    raise OptionError(
        f"write() cannot convert a {kind}: give a DataFrame, a pyarrow Table, a Hugging Face dataset or dicts"
    )


def _unconvertible(what: str, columns: dict[str, list[Any]], error: Exception, hint: str = "") -> SourceError:
    """Why Arrow could not make one table of `columns` ({name: values}): the first value
    out of its column's type, named by column and row, else Arrow's own words."""
    for name, values in columns.items():
        odd = first_odd(values)
        if odd is not None:
            row, why = odd
            return SourceError(f"{what}: column {name!r} row {row}: {why}{hint}")
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return SourceError(f"{what} do not form one table: {text}{hint}")


_INT64 = (-(1 << 63), (1 << 64) - 1)  # what Arrow takes as an integer (uint64 above int64's top)


def first_odd(values: list[Any]) -> tuple[int, str] | None:
    """(row, why) of the first value that cannot share a column with the ones before it:
    an integer no 64 bits hold (at any depth), or a kind other than the first value's."""
    first: tuple[str, int] | None = None
    for row, value in enumerate(values):
        if value is None or (isinstance(value, float) and value != value):  # a null, NaN (pandas' missing value)
            continue
        huge = _huge_integer(value)
        if huge is not None:
            return row, f"{shown(huge)} does not fit in 64 bits"
        kind = "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__
        if first is None:
            first = (kind, row)
        elif kind != first[0]:
            return row, f"{shown(value)} is a {kind}, where row {first[1]} holds a {first[0]}"
    return None


def _huge_integer(value: Any, most: int = 10_000) -> int | None:
    """An integer past 64 bits inside `value` (lists and dicts walked, `most` values at most), or None."""
    todo = [value]
    while todo and most > 0:
        most -= 1
        v = todo.pop()
        if isinstance(v, int) and not isinstance(v, bool) and not _INT64[0] <= v <= _INT64[1]:
            return v
        if isinstance(v, Mapping):
            todo += list(v.values())
        elif isinstance(v, (list, tuple)):
            todo += list(v)
    return None


def _hf_table(dataset: Any) -> Any:
    """A Hugging Face Dataset's rows as one Arrow table, in the order it shows them."""
    if getattr(dataset, "_indices", None) is not None:  # selected or shuffled: the rows it shows, in order
        dataset = dataset.flatten_indices()
    return dataset.data.table
