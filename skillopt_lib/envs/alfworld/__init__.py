"""ALFWorld: household tasks in an interactive text world, at most 50 actions each.

The agent reads an observation, replies with one command (`Action: go to cabinet 1`; lines starting with
`Think:` are allowed and cost a step), and gets the next observation, until the task is won or the step
limit is reached. Hard and soft score: 1 when the task is won.

Official data (`json_2.1.1/{train,valid_seen,valid_unseen}/<task>/<trial>/` with `traj_data.json` and
`game.tw-pddl`) is played through the real alfworld/TextWorld engine; a trial folder may also hold a
compiled TextWorld game (`game.z8` / `game.ulx` with its `game.json`, as `tw-make` writes them), played
through TextWorld alone. The game set is ALFWorld's: movable and sliced trials, task types outside the six,
and games not recorded as solvable are skipped (`engine.is_solvable`). The shipped sample uses the same
folder layout and `traj_data.json` fields with project-made games for the built-in engine
(`skillopt_lib.envs.alfworld.engine`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from skillopt_lib.backends.base import ChatMessage, Usage
from skillopt_lib.envs.alfworld.engine import NOTHING, TASK_TYPES, is_solvable, load_game
from skillopt_lib.envs.base import Item
from skillopt_lib.envs.bench import BenchmarkEnv, Rollout, ask, transcript
from skillopt_lib.skill import SkillBundle

TASK_INTRO = (
    "You are an agent in a household text game. Each turn you see what happened and reply with exactly one "
    "command on a line of the form `Action: <command>`, for example `Action: go to cabinet 1`, "
    "`Action: take mug 1 from cabinet 1`, `Action: move mug 1 to coffeemachine 1`, `Action: open fridge 1`, "
    "`Action: clean mug 1 with sinkbasin 1`, `Action: heat egg 1 with microwave 1`, "
    "`Action: cool apple 1 with fridge 1`, `Action: use desklamp 1`, `Action: examine mug 1`, "
    "`Action: inventory`, `Action: look`. You may think first on a line starting with `Think:`."
)
SPLIT_FOLDERS = {"train": "train", "valid_seen": "val", "valid_unseen": "test"}
_ACTION = re.compile(r"^\W*action\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_THINK = re.compile(r"^\W*think\s*:", re.IGNORECASE)


def parse_action(reply: str) -> tuple[str | None, bool]:
    """(command, is_thought). The last `Action:` line wins; a reply that only thinks is a thought; otherwise
    the last non-empty line is taken as the command (models often drop the prefix)."""
    actions = _ACTION.findall(reply)
    if actions:
        return actions[-1].strip().strip("`*").strip(), False
    lines = [ln.strip() for ln in reply.splitlines() if ln.strip()]
    if not lines:
        return None, False
    if all(_THINK.match(ln) for ln in lines):
        return None, True
    return lines[-1].strip("`*> ").strip(), False


def load_alfworld(root: Path, task_types: tuple[str, ...] = TASK_TYPES) -> list[Item]:
    """Every trial folder (holding `traj_data.json`) below `root`. The split is the top-level folder name
    under `json_2.1.1` (train, valid_seen -> val, valid_unseen -> test). As ALFWorld's own loader does,
    movable and sliced trials, trials of other task types and trials whose game is missing or not
    recorded as solvable are skipped. `task_types` narrows the six task types further.

    ALFWorld's loader (`alfred_tw_env.py` at alfworld/alfworld ca98194, 2025-07-22) looks for 'movable'
    and 'Sliced' in the trial folder's whole path; here only the part inside the data folder counts, so a
    data folder that happens to sit below, say, `~/movable-disk/` still loads. The official task folders
    carry these words in their own names, so the game set is the same."""
    items: list[Item] = []
    for traj in sorted(root.rglob("traj_data.json")):
        folder = traj.parent
        rel = folder.relative_to(root)
        if "movable" in str(rel) or "Sliced" in str(rel):
            continue
        data = json.loads(traj.read_text(encoding="utf-8"))
        if data.get("task_type") not in task_types or not is_solvable(folder):
            continue
        split = next((SPLIT_FOLDERS[p] for p in rel.parts if p in SPLIT_FOLDERS), None)
        anns = (data.get("turk_annotations") or {}).get("anns") or [{}]
        meta: dict[str, Any] = {"task_type": data.get("task_type", ""), "folder": str(rel)}
        if split:
            meta["split"] = split
        items.append(
            Item(
                id=str(rel).replace("\\", "/"),
                data={"game_dir": str(folder), "task_desc": anns[0].get("task_desc", "")},
                gold={"pddl_params": data.get("pddl_params", {})},
                meta=meta,
            )
        )
    return items


class ALFWorldEnv(BenchmarkEnv):
    name = "alfworld"
    download_url = (
        "https://github.com/alfworld/alfworld (pip install alfworld; then `alfworld-download` fetches "
        "json_2.1.1 with the game files)"
    )
    layout_hint = "json_2.1.1/{train,valid_seen,valid_unseen}/<task>/<trial>/ folders with traj_data.json and game.tw-pddl"
    marker_globs = ("json_2.1.1", "*/traj_data.json", "*/*/traj_data.json", "*/*/*/traj_data.json")

    def load_items(self) -> list[Item]:
        wanted = self.options.get("task_types")
        return load_alfworld(self.root, tuple(wanted) if wanted else TASK_TYPES)

    def rollout(self, item: Item, skill: SkillBundle, agent: Any) -> Rollout:
        max_steps = int(self.options.get("max_steps", 50))
        game = load_game(Path(item.data["game_dir"]), max_steps=max_steps)
        try:
            return self._play(game, skill, agent, max_steps)
        finally:
            close = getattr(game, "close", None)
            if close is not None:
                close()

    def _play(self, game: Any, skill: SkillBundle, agent: Any, max_steps: int) -> Rollout:
        observation = game.reset()
        messages = [ChatMessage("user", observation)]
        usage = Usage()
        won = False
        invalid = 0
        steps = 0
        last = ""
        while steps < max_steps and not won:
            resp = ask(agent, skill, TASK_INTRO, messages)
            usage.add(resp.usage)
            messages.append(ChatMessage("assistant", resp.text))
            command, thought = parse_action(resp.text)
            steps += 1
            if thought:
                observation = "OK."
            elif not command:
                observation = NOTHING
                invalid += 1
            else:
                observation, won = game.step(command)
                last = command
                if observation.strip() == NOTHING:
                    invalid += 1
            messages.append(ChatMessage("user", observation))
        if won:
            feedback = f"Task completed in {steps} steps ({invalid} had no effect)."
        else:
            feedback = (
                f"Task not completed within {steps} steps; {invalid} actions had no effect. "
                f"Last action: {last!r}."
            )
        score = 1.0 if won else 0.0
        return Rollout(
            hard=score,
            soft=score,
            answer=last,
            feedback=feedback,
            trajectory=transcript(messages),
            usage=usage,
            details={"steps": steps, "invalid_actions": invalid, "won": won},
        )
