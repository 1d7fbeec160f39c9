"""The layout draws the data flow: these import rules keep it that way.

sources (converters/) -> encode -> containers -> shards -> metadata, engines
driving; inspect/ reads any file without knowing any converter.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import REPO

PACKAGE = REPO / "src" / "tfr_convert"


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module imported, names taken from it) of every import in a file, made absolute."""
    tree = ast.parse(path.read_text())
    package = ".".join(("tfr_convert", *path.relative_to(PACKAGE).parent.parts))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((module, [alias.name for alias in node.names]))
    return found


def modules_imported(folder: str) -> set[str]:
    found = set()
    for path in (PACKAGE / folder).rglob("*.py"):
        for module, names in imports(path):
            found.add(module)
            found |= {f"{module}.{name}" for name in names}
    return found


def test_no_converter_imports_framing_containers_or_the_encoder():
    """The records converter reads containers, its source, through their interface: only
    `tfr_convert.containers` itself, and only there."""
    banned = (
        "tfr_convert.containers",
        "tfr_convert.engine.encode",
        "tfr_convert.output.shards",
        "tfr_convert.engine.local",
    )
    for path in (PACKAGE / "converters").rglob("*.py"):
        imported = {m for m, _ in imports(path)} | {f"{m}.{name}" for m, names in imports(path) for name in names}
        allowed = {"tfr_convert.containers"} if path.name == "records.py" else set()
        assert {m for m in imported if m.startswith(banned)} <= allowed, path.name


def test_inspect_imports_no_converter():
    assert not {m for m in modules_imported("inspect") if m.startswith("tfr_convert.converters")}


# The packages (and the few modules) directly under tfr_convert, lowest layer first: each
# imports only what comes before it, lazily or not, so the folders draw the data flow.
LAYERS = [
    "version", "errors", "optional", "skips",  # shared by every layer
    "storage",  # files wherever they are
    "containers",  # record framing in files
    "dataset",  # names, features, the Example codec, a dataset read back
    "pictures",  # a picture's policy and encoding: checked, kept or re-encoded, as TFDS's Image
    "converters",  # sources: items -> features
    "output",  # shards cut and written, committed, journaled, described
    "engine",  # what drives a run: encode, local cores or Beam, resume
    "inspect",  # reads any dataset without knowing a converter
    "export",  # the way back out
    "cli",  # the commands
    "sources",  # what a plugin imports: the public face of the layers above
    "writing",  # tfr_convert.write(): a run of the table command from Python
]  # fmt: skip


def _layer_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _layers_imported(path: Path) -> set[str]:
    found = set()
    for module, names in imports(path):
        parts = module.split(".")
        if parts[0] != "tfr_convert":
            continue
        found |= {parts[1]} if len(parts) > 1 else {n for n in names if n in LAYERS}
    return found


def test_at_most_twelve_modules_sit_side_by_side_in_any_folder():
    """A folder past a dozen modules holds more than one job: a package of its own says which."""
    crowded = {}
    for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
        modules = [p.name for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > 12:
            crowded[str(folder.relative_to(PACKAGE.parent))] = len(modules)
    assert crowded == {}


def test_at_most_ten_modules_sit_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} <= set(LAYERS)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_layer_imports_a_layer_above_it(path):
    layer = _layer_of(path)
    if layer == "__init__":
        return  # the public API may reach any layer
    above = set(LAYERS[LAYERS.index(layer) + 1 :])
    assert not _layers_imported(path) & above, path


def test_the_output_is_driven_by_the_engines_never_the_other_way_round():
    for path in (PACKAGE / "output").rglob("*.py"):
        assert not {m for m, _ in imports(path) if m.startswith(("tfr_convert.engine", "tfr_convert.cli"))}, path


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_name_is_imported_across_modules(path):
    private = [
        (m, n)
        for m, names in imports(path)
        if m.startswith("tfr_convert")
        for n in names
        if n.startswith("_") and not n.startswith("__")
    ]
    assert private == []


WRITERS = ("tfr_convert.output.shards", "tfr_convert.output.local", "tfr_convert.output.opening", "tfr_convert.output.base", "tfr_convert.output.remote", "tfr_convert.output.uploads",
           "tfr_convert.output.remote_lock", "tfr_convert.output.journal", "tfr_convert.output.metadata", "tfr_convert.engine.encode",
           "tfr_convert.engine.local", "tfr_convert.engine.beam")  # fmt: skip


def test_readers_never_import_the_writers():
    """What reads a dataset (the inspector, the loader, the metadata reader) shares only
    dataset/ and containers/ with what writes one."""
    readers = modules_imported("inspect")
    for module in ("dataset/existing.py", "dataset/loader.py"):
        found = imports(PACKAGE / module)
        readers |= {m for m, _ in found} | {f"{m}.{name}" for m, names in found for name in names}
    assert not {m for m in readers if m.startswith(WRITERS)}


def test_nobody_reaches_past_the_containers_interface():
    outside = [p for p in PACKAGE.rglob("*.py") if "containers" not in p.relative_to(PACKAGE).parts]
    reached = {(str(p.relative_to(PACKAGE)), m) for p in outside for m, _ in imports(p)
               if m.startswith("tfr_convert.containers.")}  # fmt: skip
    assert reached == set()


def converter_modules() -> set[str]:
    """The converters' modules, as the commands name them (the rest of converters/ are their helpers)."""
    from tfr_convert.cli import commands

    specs = {spec for module in commands.modules().values() for spec in module.CONVERTERS}
    return {spec.partition(":")[0].removeprefix("tfr_convert.converters.") for spec in specs}


# A variant may subclass the converter whose format it shares, as TFDS's EMNIST builder subclasses MNIST's.
VARIANTS = {("published.emnist", "published.mnist")}
# converters/ holds the shared base and a module or a package per family of sources;
# `listing` is what folder sources share, not a family
SHARED = {"base", "listing"}


def _family(module: str) -> str | None:
    """The family of a module under tfr_convert.converters (its first name there), or None."""
    if not module.startswith("tfr_convert.converters."):
        return None
    return module.split(".")[2]


def test_converters_never_import_sibling_converters():
    found = set()
    converters = converter_modules()
    assert {"published.mnist", "images", "table.converter"} <= converters
    for name in converters:
        for module, _ in imports(PACKAGE / "converters" / (name.replace(".", "/") + ".py")):
            other = module.removeprefix("tfr_convert.converters.")
            if other in converters - {name} and (name, other) not in VARIANTS:
                found.add((name, other))
    assert found == set()


def test_no_family_of_sources_imports_another():
    """converters/ is a folder per family (published, annotations, table, media; images and
    records, a module each): a family imports the shared base and listing, the layers
    below (pictures among them), and nothing of another family."""
    crossing = set()
    for path in (PACKAGE / "converters").rglob("*.py"):
        mine = _family("tfr_convert." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        for module, names in imports(path):
            for target in [module, *(f"{module}.{n}" for n in names)]:
                theirs = _family(target)
                if theirs and mine and theirs != mine and theirs not in SHARED and mine not in SHARED | {"__init__"}:
                    crossing.add((str(path.relative_to(PACKAGE)), target))
    assert crossing == set()


def test_pictures_sit_below_the_converters():
    """The picture policy is a layer of its own that every source storing pictures uses:
    nothing of it is left in converters/, and it imports no converter."""
    assert not list((PACKAGE / "converters").rglob("imaging.py"))
    for path in (PACKAGE / "pictures").rglob("*.py"):
        assert not {m for m, _ in imports(path) if m.startswith("tfr_convert.converters")}, path.name


def test_the_writers_parts_do_not_import_each_other_in_a_cycle():
    """shards (the cutter and split writer) knows nothing of the output or the journal."""
    imported = {m for m, _ in imports(PACKAGE / "output" / "shards.py")}
    assert not {m for m in imported if m.startswith(("tfr_convert.output.local", "tfr_convert.output.journal"))}


def test_the_beam_engine_shares_the_engine_core_not_the_local_loop():
    assert not {m for m, _ in imports(PACKAGE / "engine" / "beam.py") if m.startswith("tfr_convert.engine.local")}


def test_the_commands_import_their_converters_only_when_run():
    """cli/commands/ is imported to parse any command line: a converter imported at a
    module's top would make every command pay for its dependencies (numpy, Pillow)."""
    for path in (PACKAGE / "cli" / "commands").glob("*.py"):
        top = ast.parse(path.read_text()).body
        names = {"." * node.level + (node.module or "") for node in top if isinstance(node, ast.ImportFrom)}
        names |= {alias.name for node in top if isinstance(node, ast.Import) for alias in node.names}
        assert not {name for name in names if "converters" in name}, path.name


def _the_map() -> str:
    text = (PACKAGE.parent.parent / "ARCHITECTURE.md").read_text()
    return text[text.index("## Module map") : text.index("## Rules, and why")]


def test_the_architecture_map_names_every_module():
    """ARCHITECTURE.md's module map, against the tree: a module added, moved or renamed
    without its line there fails here."""
    the_map = _the_map()
    unnamed = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
               if p.name != "__init__.py" and p.parent.name != "commands" and p.name not in the_map]  # fmt: skip
    assert unnamed == []


def test_every_module_the_map_names_exists():
    import re

    names = set(re.findall(r"\b([a-z_0-9]+\.py)\b", _the_map()))
    existing = {p.name for p in PACKAGE.rglob("*.py")}
    assert sorted(names - existing) == []


def test_no_module_imports_itself_through_others():
    """The whole package's import graph, lazy imports included, has no cycle (a strongly
    connected component of more than one module)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for imported, names in imports(path):
            target = next((c for c in [*(f"{imported}.{n}" for n in names), imported] if c in modules), None)
            if target is not None and target != module:
                graph[module].add(target)
    # Tarjan's strongly connected components, without recursion
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    assert cycles == []


def _built_in_converters() -> list[type]:
    from tfr_convert.cli import commands

    return [cls for module in commands.modules().values() for cls in commands.converter_classes(module)]


@pytest.mark.parametrize("cls", _built_in_converters(), ids=lambda cls: cls.__name__)
def test_every_built_in_converter_is_made_from_a_source_its_options_and_a_context(cls):
    import inspect

    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert [p.name for p in params[1:]] == ["options", "context"], cls
    assert params[2].default is None and all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)


def test_the_context_a_converter_keeps_travels_to_workers_without_its_listing_helper(tmp_path):
    import pickle

    from tfr_convert.converters.base import SourceContext
    from tfr_convert.converters.images import ImagesConverter

    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "a.png").write_bytes(b"")
    made = ImagesConverter(
        str(tmp_path), None, SourceContext(seed=7, on_error="skip", fill_in_parts=lambda fill, n: None)
    )
    copied = pickle.loads(pickle.dumps(made))  # what a spawned worker or Beam receives
    assert copied.context == SourceContext(seed=7, on_error="skip")


def test_no_function_runs_over_60_lines_unless_its_docstring_says_why():
    """Long bodies read as a few named steps; the exceptions say "long on purpose" and why."""
    import ast

    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60:
                if "long on purpose" not in (ast.get_docstring(node) or "").lower():
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert long == []


TESTS = REPO / "tests"


def test_tests_are_laid_out_like_the_code():
    """Each test module sits in tests/PACKAGE/ for a package of src/tfr_convert, or in
    tests/system/ for the suites that take the whole tool at once; none at the top."""
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    misplaced = [
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("test_*.py")
        if path.parent == TESTS or path.relative_to(TESTS).parts[0] not in packages | {"system"}
    ]
    assert misplaced == []


def test_no_test_module_imports_another():
    """What tests share lives in helper modules beside conftest.py, not in a test module."""
    tests = {path.stem for path in TESTS.rglob("test_*.py")}
    found = []
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            found += [f"{path.relative_to(TESTS)} imports {n}" for n in names if n in tests and n != path.stem]
    assert found == []


def test_every_built_in_source_is_the_files_the_add_a_converter_steps_name():
    """CONTRIBUTING.md's steps for a new source name its files with NAME: each built-in
    command has every one of them (its command module, its test), and a golden."""
    import re

    from tfr_convert.cli import commands

    steps = (REPO / "CONTRIBUTING.md").read_text().split("## How to add a converter", 1)[1].split("\n## ", 1)[0]
    named = sorted(set(re.findall(r"`((?:src|tests)/[\w/]*NAME[\w/]*\.py)`", steps)))
    assert "src/tfr_convert/cli/commands/NAME.py" in named and "tests/converters/test_NAME.py" in named
    missing = [
        p.replace("NAME", c) for c in commands.modules() for p in named if not (REPO / p.replace("NAME", c)).exists()
    ]
    assert missing == []
    assert "tests/system/test_golden.py" in steps  # (test_golden checks that every command has one)
