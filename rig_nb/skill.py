"""Skills: markdown files with a two-key frontmatter, advertised to the model and loaded on demand.

A skill file looks like::

    ---
    name: json-answer
    description: How to answer with a single JSON object.
    ---
    Body: the instructions the model reads when it calls load_skill.

Only `name:` and `description:` are read from the frontmatter (single-line
values, parsed by hand: no YAML dependency); other keys are ignored.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from .errors import SkillError
from .tool import Tool

if sys.version_info >= (3, 11):
    from importlib.resources.abc import Traversable
else:  # pragma: no cover
    from importlib.abc import Traversable

__all__ = [
    "Skill",
    "advertise",
    "default_skills",
    "load_skill_tool",
    "load_skills",
    "merge_skills",
]

_ADVERTISE_HEADER = (
    "Skills are available. Before acting on one, call the load_skill tool with "
    "the skill's name to read its instructions:"
)

_DELIMITER = "---"
# A skill body goes into the prompt; a file past this is not a skill.
MAX_SKILL_BYTES = 1 << 20
_KEYS = ("name", "description")
# The echoed name comes from the model; a cap keeps a runaway argument out of the next prompt.
_MAX_ECHOED_NAME = 80


@dataclass(frozen=True)
class Skill:
    """A named set of instructions the model loads on demand with load_skill."""

    name: str
    description: str
    body: str


def _parse(text: str) -> Skill | str:
    """Return the skill, or the reason the file is broken."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if lines[0].strip() != _DELIMITER:
        return "no frontmatter (the first line must be '---')"
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == _DELIMITER)
    except StopIteration:
        return "unterminated frontmatter (no closing '---' line)"
    values: dict[str, str] = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or key not in _KEYS:
            continue
        if key in values:
            return f"{key!r} given twice in the frontmatter"
        values[key] = value.strip()
    missing = [k for k in _KEYS if not values.get(k)]
    if missing:
        return "missing or empty " + " and ".join(repr(k) for k in missing)
    body = "\n".join(lines[end + 1 :]).strip()
    return Skill(name=values["name"], description=values["description"], body=body)


def _problem_with_link(entry: Traversable, root: Traversable) -> str:
    """Why a filesystem entry cannot be read as a skill file ("" when it can)."""
    if not isinstance(entry, Path) or not isinstance(root, Path):
        return ""
    if entry.is_symlink():
        if not entry.exists():
            return "dangling symlink"
        if not entry.resolve().is_relative_to(root.resolve()):
            return "symlink to a file outside the skill directory"
    if entry.exists() and not entry.is_file():
        return "not a regular file"
    return ""


def _read(entry: Traversable) -> Skill | str:
    try:
        with entry.open("rb") as f:
            raw = f.read(MAX_SKILL_BYTES + 1)
    except OSError as exc:
        return f"unreadable ({type(exc).__name__})"
    if len(raw) > MAX_SKILL_BYTES:
        return f"larger than {MAX_SKILL_BYTES} bytes"
    if b"\0" in raw:
        return "binary (holds NUL bytes)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    return _parse(text)


def _is_candidate(entry: Traversable) -> bool:
    # A dangling or misdirected link is a broken skill file, not an absent one.
    return entry.is_file() or (isinstance(entry, Path) and entry.is_symlink())


def load_skills(path: str | os.PathLike[str] | Traversable) -> list[Skill]:
    """Load every `*.md` file directly in a directory or Traversable; sorted by name.

    Raises SkillError naming every broken or duplicated file, or when the
    directory does not exist.
    """
    root: Traversable = Path(path) if isinstance(path, (str, os.PathLike)) else path
    if not root.is_dir():
        raise SkillError(f"skill directory not found: {str(root)!r}")
    entries = sorted(
        (e for e in root.iterdir() if e.name.endswith(".md") and _is_candidate(e)),
        key=lambda e: e.name,
    )
    problems: list[tuple[str, str]] = []
    by_name: dict[str, list[tuple[str, Skill]]] = {}
    for entry in entries:
        link = _problem_with_link(entry, root)
        result = link or _read(entry)
        if isinstance(result, str):
            problems.append((entry.name, result))
        else:
            by_name.setdefault(result.name, []).append((entry.name, result))
    for name, found in by_name.items():
        if len(found) > 1:
            others = [f for f, _ in found]
            for file, _ in found:
                shared = ", ".join(o for o in others if o != file)
                problems.append((file, f"duplicate name {name!r} (also in {shared})"))
    if problems:
        problems.sort()
        lines = [f"  {file}: {reason}" for file, reason in problems]
        noun = "file" if len(problems) == 1 else "files"
        raise SkillError(f"{len(problems)} broken skill {noun}:\n" + "\n".join(lines))
    return sorted((found[0][1] for found in by_name.values()), key=lambda s: s.name)


def default_skills() -> list[Skill]:
    """The skills embedded in the package (rig_nb/skills/*.md)."""
    return load_skills(files("rig_nb") / "skills")


def merge_skills(base: Iterable[Skill], overrides: Iterable[Skill]) -> list[Skill]:
    """Base skills with overrides applied by name (an override wins); sorted by name."""
    merged = {s.name: s for s in base}
    merged.update((s.name, s) for s in overrides)
    return sorted(merged.values(), key=lambda s: s.name)


def _one_line(s: str) -> str:
    # A newline in a name or description would forge extra lines in the block.
    return " ".join(s.split())


def advertise(skills: Iterable[Skill]) -> str:
    """The system prompt block listing skills in name order; "" for no skills."""
    ordered = sorted(skills, key=lambda s: (s.name, s.description))
    if not ordered:
        return ""
    lines = [f"- {_one_line(s.name)}: {_one_line(s.description)}" for s in ordered]
    return "\n".join([_ADVERTISE_HEADER, *lines])


def load_skill_tool(skills: Iterable[Skill]) -> Tool:
    """The built-in `load_skill` tool: returns a skill's body; a miss lists the available names."""
    by_name = {s.name: s for s in skills}
    available = ", ".join(sorted(by_name)) or "(none)"

    def run(args: dict[str, Any]) -> str:
        name = args.get("name")
        if not isinstance(name, str):
            raise ValueError(f"load_skill needs a string 'name'; available skills: {available}")
        skill = by_name.get(name) or by_name.get(name.strip())
        if skill is None:
            shown = name if len(name) <= _MAX_ECHOED_NAME else name[:_MAX_ECHOED_NAME] + "..."
            raise ValueError(f"unknown skill {shown!r}; available skills: {available}")
        return skill.body

    return Tool(
        name="load_skill",
        description=(
            "Read the full instructions of a skill listed in the system prompt. "
            "Call it with the skill's name before acting on that skill."
        ),
        # Built per tool: to_openai() copies only the top level of the schema.
        input_schema={
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
        run=run,
    )
