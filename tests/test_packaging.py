"""Packaging: one version string, and every package rig_nb imports is declared in pyproject.toml."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path
from typing import Any

import rig_nb

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "rig_nb"
# Modules and packages of rig_nb/ that may need the notebook, otel or mcp extra; the rest is
# core, and what only core imports must come with a plain `pip install rig_nb`.
EXTRA_SIDE = ("compare", "mcp", "report", "widgets")
# Extras for working on rig_nb, not for using it: nothing in rig_nb/ may rely on them.
DEVELOPMENT_EXTRAS = ("test", "browser", "bench")
# Standard library on later Pythons than some supported one, imported with a fallback.
LATER_STDLIB = {"tomllib"}
# Import names that are not their distribution's name. packages_distributions() knows
# more, but on Python 3.10 only those whose distribution ships a top_level.txt.
DISTRIBUTIONS = {
    "IPython": ["ipython"],
    "google": ["protobuf"],
    "opentelemetry": ["opentelemetry-proto"],
    "yaml": ["pyyaml"],
}


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def normalized(requirement: str) -> str:
    """The distribution name of a requirement string, as PEP 503 normalizes it."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group()).lower()


def imports() -> dict[str, set[str]]:
    """Top-level name of every absolute import in rig_nb/ (in functions too) -> the modules,
    each named by its first component under rig_nb/ ("report" for rig_nb/report/html.py)."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                where = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
                found.setdefault(name.split(".")[0], set()).add(where)
    return found


def test_the_version_is_written_once() -> None:
    project = pyproject()
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"] == {"path": "rig_nb/_version.py"}
    # The installed metadata: reinstall (scripts/check does) after changing _version.py.
    assert importlib.metadata.version("rig_nb") == rig_nb.__version__


def test_every_import_is_declared() -> None:
    project = pyproject()["project"]
    core = {normalized(r) for r in project["dependencies"]}
    extras = {
        normalized(r)
        for group, requirements in project["optional-dependencies"].items()
        if group not in DEVELOPMENT_EXTRAS
        for r in requirements
    }
    to_distributions: dict[str, list[str]] = {}
    missing = []
    for name, modules in sorted(imports().items()):
        if name in sys.stdlib_module_names or name in LATER_STDLIB or name == "rig_nb":
            continue
        names = {normalized(c) for c in DISTRIBUTIONS.get(name, [name])}
        core_only = modules.isdisjoint(EXTRA_SIDE)
        declared = core if core_only else core | extras
        if not names & declared:
            # Listing what every installed distribution provides takes a second: only here.
            to_distributions = to_distributions or importlib.metadata.packages_distributions()
            names |= {normalized(c) for c in to_distributions.get(name, [])}
        if not names & declared:
            where = "the dependencies" if core_only else "the dependencies or an extra"
            missing.append(f"{name} ({' or '.join(sorted(names))}) in {where}: {sorted(modules)}")
    assert missing == []


def test_the_extra_side_is_named_as_it_is() -> None:
    # A rename would silently move a module to the core side of the check above.
    for name in EXTRA_SIDE:
        assert (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file(), name
