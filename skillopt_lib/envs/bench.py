"""What every built-in benchmark shares: finding its data, deterministic splits, the seed skill, and running
one chat item with the skill in front of the model.

A benchmark package only says how to read its official files (`load_items`) and how to run and score one
item (`rollout`). Everything a user can get wrong (no data downloaded, data in the wrong folder) is caught
here and explained with the exact download location, so every benchmark fails the same helpful way.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from skillopt_lib import userdir
from skillopt_lib.backends.base import ChatMessage, ChatResponse, Usage
from skillopt_lib.envs.base import Item, ItemResult, Splits
from skillopt_lib.errors import ConfigError, SkillOptError
from skillopt_lib.skill import SKILL_FILE, SkillBundle

SPLIT_NAMES = ("train", "val", "test")
# The paper's ratio when a dataset ships no split of its own: train : val : test = 2 : 1 : 7.
DEFAULT_RATIO = (2, 1, 7)
MANIFEST_FILE = "splits.json"


def default_data_dir(name: str) -> Path:
    """Where `skillopt train --env NAME` looks for official data when `--data-dir` is not given."""
    return userdir.benchmarks_dir() / name


@dataclass
class Rollout:
    """What one benchmark's `rollout` hands back; `BenchmarkEnv.run` adds timing and turns it into a result."""

    hard: float
    soft: float
    answer: str = ""
    feedback: str = ""
    trajectory: str = ""
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class BenchmarkEnv:
    """Base of the built-in benchmarks. Subclasses set the class attributes and implement `load_items`
    and `rollout`; `splits`, `seed_skill` and `run` come from here.

    Constructor contract shared by every environment: `EnvClass(sample=False, data_dir=None, seed=42,
    **options)`. `sample=True` uses the small sample in the official format shipped inside the package.
    """

    name: str = ""
    agent_kind: Literal["chat", "exec"] = "chat"
    #: where the official data comes from and what to put where (shown when it is missing)
    download_url: ClassVar[str] = ""
    layout_hint: ClassVar[str] = ""
    #: a file or folder (relative to the data folder) whose presence means the data is there
    marker_globs: ClassVar[Sequence[str]] = ()
    ratio: ClassVar[tuple[int, int, int]] = DEFAULT_RATIO

    def __init__(
        self,
        sample: bool = False,
        data_dir: str | Path | None = None,
        seed: int = 42,
        *,
        limit: int | None = None,
        **options: Any,
    ) -> None:
        self.sample = sample
        self.seed = seed
        self.limit = limit
        self.options = options
        self.root = self._locate(data_dir)
        self._splits: Splits | None = None

    # ------------------------------------------------------------------ data

    @classmethod
    def package_dir(cls) -> Path:
        module = sys.modules[cls.__module__]
        return Path(module.__file__ or ".").resolve().parent

    @classmethod
    def sample_dir(cls) -> Path:
        return cls.package_dir() / "sample"

    def _has_data(self, folder: Path) -> bool:
        if not folder.is_dir():
            return False
        return any(next(iter(folder.glob(pattern)), None) is not None for pattern in self.marker_globs)

    def _locate(self, data_dir: str | Path | None) -> Path:
        if self.sample and data_dir is None:
            return self.sample_dir()
        folder = Path(data_dir).expanduser() if data_dir is not None else default_data_dir(self.name)
        if self._has_data(folder):
            return folder.resolve()
        where = "in the folder given by --data-dir" if data_dir is not None else "in the default data folder"
        raise ConfigError(
            f"no {self.name} data found {where} ({folder})",
            hint=(
                f"download the official {self.name} data from {self.download_url} and put it so that "
                f"{folder} holds {self.layout_hint}; or pass --data-dir DIR pointing at such a folder; "
                f"or run with --sample to use the small sample shipped with skillopt"
            ),
        )

    def load_items(self) -> list[Item]:
        """Every item of the data in `self.root`, in file order. `meta['split']` may carry an official split."""
        raise NotImplementedError

    # ------------------------------------------------------------------ splits

    def splits(self) -> Splits:
        """Deterministic and disjoint. Precedence: a `splits.json` manifest in the data folder, then the
        dataset's own split (`meta['split']` on every item), then a seeded 2:1:7 shuffle of sorted ids."""
        if self._splits is None:
            items = self.load_items()
            manifest = split_manifest(items, self.root / MANIFEST_FILE, seed=self.seed, ratio=self.ratio)
            by_id = {item.id: item for item in items}
            parts = [[by_id[i] for i in manifest[s] if i in by_id] for s in SPLIT_NAMES]
            if self.limit is not None:
                parts = [p[: self.limit] for p in parts]
            self._splits = Splits(train=parts[0], val=parts[1], test=parts[2])
        return self._splits

    def seed_skill(self) -> SkillBundle:
        return SkillBundle.from_path(self.package_dir() / SKILL_FILE)

    # ------------------------------------------------------------------ running

    def rollout(self, item: Item, skill: SkillBundle, agent: Any) -> Rollout:
        raise NotImplementedError

    def run(self, item: Item, skill: SkillBundle, agent: Any) -> ItemResult:
        """Run one item; a garbled or failed answer is a result with hard 0 and the reason, never a raise.

        Errors of ours (`SkillOptError`: the model endpoint unreachable after retries, a missing agent CLI,
        a wrong agent kind) are not the agent's fault and propagate, so a broken setup stops a run instead
        of scoring every item 0.
        """
        start = time.monotonic()
        try:
            out = self.rollout(item, skill, agent)
        except SkillOptError:
            raise
        except Exception as exc:  # the agent's reply broke the task: score it, keep going
            out = Rollout(hard=0.0, soft=0.0, error=f"{type(exc).__name__}: {exc}", feedback=str(exc))
        return ItemResult(
            item_id=item.id,
            hard=float(out.hard),
            soft=float(out.soft),
            feedback=out.feedback,
            trajectory=out.trajectory,
            answer=out.answer,
            usage=out.usage,
            error=out.error,
            duration_s=time.monotonic() - start,
            details=out.details,
        )


def split_manifest(
    items: Sequence[Item],
    manifest_path: Path | None = None,
    *,
    seed: int = 42,
    ratio: tuple[int, int, int] = DEFAULT_RATIO,
) -> dict[str, list[str]]:
    """Item ids per split. A manifest file wins; otherwise official splits; otherwise a seeded shuffle.

    The shuffle starts from ids sorted by a hash, not file order, so appending items to a data file does
    not move the existing ones between splits more than the ratio requires.
    """
    if manifest_path is not None and manifest_path.is_file():
        data = json.loads(manifest_path.read_text(encoding="utf-8"))
        known = {item.id for item in items}
        manifest = {s: [str(i) for i in data.get(s, [])] for s in SPLIT_NAMES}
        missing = [i for s in SPLIT_NAMES for i in manifest[s] if i not in known]
        if missing:
            raise ConfigError(
                f"{manifest_path} names {len(missing)} item(s) that are not in the data (first: {missing[0]!r})",
                hint="regenerate the manifest or remove it to split the data automatically",
            )
        return manifest
    if items and all(item.meta.get("split") in SPLIT_NAMES for item in items):
        return {s: [i.id for i in items if i.meta.get("split") == s] for s in SPLIT_NAMES}
    ids = sorted((item.id for item in items), key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    random.Random(seed).shuffle(ids)
    total = sum(ratio)
    n = len(ids)
    n_train = max(1, round(n * ratio[0] / total)) if n >= 3 else n
    n_val = max(1, round(n * ratio[1] / total)) if n >= 3 else 0
    return {"train": ids[:n_train], "val": ids[n_train : n_train + n_val], "test": ids[n_train + n_val :]}


# ---------------------------------------------------------------------- chat plumbing


def skill_system_prompt(skill: SkillBundle, task_intro: str) -> str:
    """The system prompt: what the task is, then the skill verbatim (SKILL.md and its other text files).

    The skill goes in whole so that what the optimizer edits is exactly what the model reads.
    """
    texts = skill.text_files()
    parts = [task_intro.strip(), "", "Follow this skill:", "", texts.get(SKILL_FILE, "").strip()]
    for path in sorted(p for p in texts if p != SKILL_FILE):
        parts += ["", f"--- skill file {path} ---", texts[path].strip()]
    return "\n".join(parts).strip() + "\n"


def ask(
    agent: Any,
    skill: SkillBundle,
    task_intro: str,
    messages: list[ChatMessage],
    **kwargs: Any,
) -> ChatResponse:
    """One chat completion with the skill as system prompt; counts the call even if a backend forgot."""
    resp: ChatResponse = agent.complete(messages, system=skill_system_prompt(skill, task_intro), **kwargs)
    if resp.usage.calls == 0:
        resp.usage = Usage(resp.usage.input_tokens, resp.usage.output_tokens, 1, resp.usage.cost_usd)
    return resp


def transcript(messages: Sequence[ChatMessage], reply: str | None = None) -> str:
    """A readable trajectory for the optimizer (images shown as a placeholder)."""
    lines = []
    for m in messages:
        if isinstance(m.content, str):
            body = m.content
        else:
            body = "\n".join(p if isinstance(p, str) else f"[image {p.media_type}]" for p in m.content)
        lines.append(f"[{m.role}]\n{body}")
    if reply is not None:
        lines.append(f"[assistant]\n{reply}")
    return "\n\n".join(lines)


def read_json_or_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records from a .json file (a list, an object with a `data` or `items` list, or one record: an object
    with a `question`) or a .jsonl file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    data = json.loads(text)
    if isinstance(data, dict):
        if "data" in data or "items" in data:
            data = data.get("data", data.get("items", []))
        elif "question" in data:
            data = [data]
        else:
            data = []
    if not isinstance(data, list):
        raise ConfigError(f"{path} does not hold a list of records")
    return [d for d in data if isinstance(d, dict)]
