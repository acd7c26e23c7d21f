"""Docs that cannot drift: every plugin hook and every field of a tool's row is described in
docs/plugins.md, every setting in the docs page of its section, and docs/architecture.md's layout table names
every module of the library and of each daemon layer below the faces (datasette's test_docs.py habit)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest
from pydantic import BaseModel

from skillopt_daemon.core.config import Settings, ToolSettings
from skillopt_lib.agents import ToolSpec
from skillopt_lib.plugins import HookSpecs

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
# Sections whose model is the library's BackendConfig, documented once in docs/backends.md.
BACKEND_SECTIONS = ("agent", "optimizer", "judge")


def _doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _hooks() -> list[str]:
    return sorted(n for n in vars(HookSpecs) if n.startswith("skillopt_"))


@pytest.mark.parametrize("hook", _hooks())
def test_every_hook_has_its_section_in_the_plugin_guide(hook: str) -> None:
    assert f"### `{hook}`" in _doc("plugins.md"), f"docs/plugins.md has no section for the hook {hook}"


@pytest.mark.parametrize("name", [f.name for f in fields(ToolSpec)])
def test_every_field_of_a_tool_row_is_described(name: str) -> None:
    assert f"`{name}`" in _doc("plugins.md"), f"docs/plugins.md does not describe ToolSpec.{name}"


def _settings(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel) and name not in BACKEND_SECTIONS:
            yield from _settings(ann, f"{prefix}{name}.")
        elif name not in ("tools", "prices", *BACKEND_SECTIONS) or prefix:
            yield f"{prefix}{name}"


def _documented(key: str, pages: dict[str, str]) -> bool:
    """`night.epochs` is documented as itself anywhere, or as `epochs` on a page about `[night]`."""
    section, _, rest = key.partition(".")
    for text in pages.values():
        if f"`{key}`" in text or f"`{key} " in text or f"`{key}=" in text:
            return True
        if f"`[{section}]`" in text and re.search(r"`" + re.escape(rest) + r"[`\s=]", text):
            return True
    return False


@pytest.mark.parametrize("key", list(_settings(Settings)))
def test_every_setting_is_documented(key: str) -> None:
    pages = {p.name: p.read_text(encoding="utf-8") for p in DOCS.glob("*.md") if p.name != "cli.md"}
    assert _documented(key, pages), f"no page in docs/ describes the setting {key}"


@pytest.mark.parametrize("name", list(ToolSettings.model_fields))
def test_every_per_tool_setting_is_documented(name: str) -> None:
    pages = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md") if p.name != "cli.md")
    assert f"tools.<tool>.{name}" in pages, f"no page in docs/ describes tools.<tool>.{name}"


LAYERS = ("core", "ingest", "registry", "night", "integrations", "service", "team", "plugins")


def _modules() -> Iterator[Path]:
    """The library's modules and packages, those of each daemon layer below the faces, and those of each of
    the night's phases (its folders are the phases, so each has its own row)."""
    night = ROOT / "skillopt_daemon" / "night"
    phases = [p for p in sorted(night.iterdir()) if (p / "__init__.py").is_file()]
    folders = [ROOT / "skillopt_lib"] + [ROOT / "skillopt_daemon" / layer for layer in LAYERS] + phases
    for folder in folders:
        for p in sorted(folder.iterdir()):
            if p.name.startswith("_"):
                continue
            if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").is_file()):
                yield p


def _row(package: str) -> str:
    """The layout table's row of `package` (e.g. `skillopt_daemon/night/`): a module named in another
    package's row is not where a reader of this one looks."""
    doc = _doc("architecture.md")
    layout = doc[doc.index("## Layout") : doc.index("## Decisions")]
    for line in layout.splitlines():
        cells = line.split(" | ")
        if line.startswith("| ") and package in re.findall(r"`([^`]+)`", cells[0]):
            return cells[1] if len(cells) > 1 else ""
    return ""


def test_every_layer_has_its_row_in_the_layout_table() -> None:
    packages = ["skillopt_lib/", *(f"skillopt_daemon/{layer}/" for layer in LAYERS)]
    packages += [
        f"skillopt_daemon/night/{p.name}/"
        for p in sorted((ROOT / "skillopt_daemon/night").iterdir())
        if (p / "__init__.py").is_file()
    ]
    assert [p for p in packages if not _row(p)] == []


@pytest.mark.parametrize("path", list(_modules()), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_layout_table_names_every_module(path: Path) -> None:
    package = path.parent.relative_to(ROOT).as_posix() + "/"
    row = _row(package)
    name = path.stem if path.suffix == ".py" else path.name
    pattern = r"`[^`\n]*(?<![\w.])" + re.escape(name) + r"(\.py|/)?(?!\w)[^`\n]*`"
    assert re.search(pattern, row), (
        f"docs/architecture.md's layout row for {package} does not list {path.relative_to(ROOT)}"
    )
