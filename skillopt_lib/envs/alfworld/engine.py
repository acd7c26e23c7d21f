"""Text games the ALFWorld environment plays: a small protocol, and two engines behind it.

`TextGame` is all the rollout loop needs: `reset()` gives the first observation (room overview plus the
task line), `step(command)` gives the next observation and whether the task is won.

- `TextWorldGame` plays the official ALFWorld game files (`game.tw-pddl`) through the real `alfworld` /
  TextWorld engine, with ALFWorld's own wrappers. It needs `pip install alfworld` (which builds the
  fast-downward planner and pulls in spaCy).
- `MiniAlfredGame` plays the project-made sample games (`game.skillopt.json`): the same household world
  (receptacles that open and close, objects to take, move, clean, heat, cool, and lamps to turn on), the same
  six task types and ALFWorld's observation and command wording, in a few hundred lines of Python. It is not
  the ALFRED PDDL domain; it exists so the benchmark runs everywhere and its tests run offline.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from skillopt_lib.errors import ConfigError

INTRO = "-= Welcome to TextWorld, ALFRED! =-"
NOTHING = "Nothing happens."

TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)


class TextGame(Protocol):
    def reset(self) -> str: ...

    def step(self, command: str) -> tuple[str, bool]: ...


def _kind(name: str) -> str:
    """'cabinet 3' -> 'cabinet'."""
    return re.sub(r"\s+\d+$", "", name.strip())


def _article(name: str) -> str:
    return "a"  # ALFWorld writes "a" before every name ("a apple 1")


def _listing(names: list[str]) -> str:
    if not names:
        return "nothing"
    items = [f"{_article(n)} {n}" for n in names]
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + ", and " + items[-1]


@dataclass
class _Receptacle:
    name: str
    openable: bool = False
    is_open: bool = True
    contents: list[str] = field(default_factory=list)
    on: bool = False  # lamps


@dataclass
class _Object:
    name: str
    states: set[str] = field(default_factory=set)  # clean, hot, cool


@dataclass(frozen=True)
class Goal:
    task_type: str
    object: str
    receptacle: str | None = None
    state: str | None = None  # clean | hot | cool
    count: int = 1
    lamp: str | None = None

    def describe(self) -> str:
        if self.task_type == "look_at_obj_in_light":
            return f"look at {self.object} under the {self.lamp or 'desklamp'}."
        if self.task_type == "pick_two_obj_and_place":
            return f"put two {self.object} in {self.receptacle}."
        adjective = {"clean": "clean ", "hot": "hot ", "cool": "cool "}.get(self.state or "", "")
        return f"put {_article(adjective or self.object)} {adjective}{self.object} in {self.receptacle}."


class MiniAlfredGame:
    """One household task; deterministic, so the same commands always give the same observations."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        goal = spec["goal"]
        task_type = spec.get("task_type", goal.get("task_type"))
        if task_type not in TASK_TYPES:
            raise ConfigError(f"unknown ALFWorld task type {task_type!r}")
        self.goal = Goal(
            task_type=task_type,
            object=goal["object"],
            receptacle=goal.get("receptacle"),
            state=goal.get("state"),
            count=int(goal.get("count", 2 if task_type == "pick_two_obj_and_place" else 1)),
            lamp=goal.get("lamp"),
        )
        self.reset()

    def reset(self) -> str:
        self.receptacles: dict[str, _Receptacle] = {}
        for r in self.spec["receptacles"]:
            openable = bool(r.get("openable", False))
            self.receptacles[r["name"]] = _Receptacle(
                name=r["name"], openable=openable, is_open=not openable or not r.get("closed", True)
            )
        self.objects: dict[str, _Object] = {}
        for o in self.spec["objects"]:
            self.objects[o["name"]] = _Object(o["name"], set(o.get("states", [])))
            self.receptacles[o["in"]].contents.append(o["name"])
        self.location: str | None = None
        self.holding: str | None = None
        overview = _listing(list(self.receptacles))
        return (
            f"{INTRO}\n\nYou are in the middle of a room. Looking quickly around you, you see {overview}.\n\n"
            f"Your task is to: {self.spec.get('task_desc') or self.goal.describe()}"
        )

    # ------------------------------------------------------------------ observation helpers

    def _examine_receptacle(self, r: _Receptacle) -> str:
        if r.openable and not r.is_open:
            return f"The {r.name} is closed."
        if r.openable:
            return f"The {r.name} is open. In it, you see {_listing(r.contents)}."
        return f"On the {r.name}, you see {_listing(r.contents)}."

    def _here(self) -> _Receptacle | None:
        return self.receptacles.get(self.location or "")

    # ------------------------------------------------------------------ commands

    def step(self, command: str) -> tuple[str, bool]:
        cmd = " ".join(command.strip().lower().rstrip(".").split())
        obs = self._dispatch(cmd)
        return obs, self.won()

    def _dispatch(self, cmd: str) -> str:
        if cmd in ("look", "look around"):
            here = self._here()
            if here is None:
                return f"You are in the middle of a room. Looking quickly around you, you see {_listing(list(self.receptacles))}."
            return f"You are facing the {here.name}. Next to it, you see nothing."
        if cmd in ("inventory", "inv", "i"):
            return (
                f"You are carrying: {_article(self.holding)} {self.holding}."
                if self.holding
                else "You are not carrying anything."
            )
        if cmd == "help":
            return (
                "Available commands: look, inventory, go to (receptacle), open (receptacle), close (receptacle), "
                "take (object) from (receptacle), move (object) to (receptacle), examine (something), "
                "use (object), heat (object) with (receptacle), clean (object) with (receptacle), "
                "cool (object) with (receptacle)"
            )
        patterns: list[tuple[str, Any]] = [
            (r"go to (.+)", self._go),
            (r"open (.+)", self._open),
            (r"close (.+)", self._close),
            (r"take (.+) from (.+)", self._take),
            (r"(?:move|put) (.+) (?:to|in|on|in/on) (.+)", self._put),
            (r"examine (.+)", self._examine),
            (r"use (.+)", self._use),
            (r"heat (.+) with (.+)", lambda o, r: self._treat(o, r, "hot", "microwave", "heat")),
            (r"cool (.+) with (.+)", lambda o, r: self._treat(o, r, "cool", "fridge", "cool")),
            (r"clean (.+) with (.+)", lambda o, r: self._treat(o, r, "clean", "sinkbasin", "clean")),
        ]
        for pattern, handler in patterns:
            m = re.fullmatch(pattern, cmd)
            if m:
                result: str = handler(*m.groups())
                return result
        return NOTHING

    def _go(self, target: str) -> str:
        r = self.receptacles.get(target)
        if r is None:
            return NOTHING
        self.location = r.name
        return f"You arrive at {r.name}. {self._examine_receptacle(r)}"

    def _open(self, target: str) -> str:
        r = self.receptacles.get(target)
        if r is None or self.location != r.name or not r.openable or r.is_open:
            return NOTHING
        r.is_open = True
        return f"You open the {r.name}. {self._examine_receptacle(r)}"

    def _close(self, target: str) -> str:
        r = self.receptacles.get(target)
        if r is None or self.location != r.name or not r.openable or not r.is_open:
            return NOTHING
        r.is_open = False
        return f"You close the {r.name}."

    def _take(self, obj: str, target: str) -> str:
        r = self.receptacles.get(target)
        if r is None or self.location != r.name or self.holding or obj not in r.contents or not r.is_open:
            return NOTHING
        r.contents.remove(obj)
        self.holding = obj
        return f"You pick up the {obj} from the {r.name}."

    def _put(self, obj: str, target: str) -> str:
        r = self.receptacles.get(target)
        if r is None or self.location != r.name or self.holding != obj or not r.is_open:
            return NOTHING
        r.contents.append(obj)
        self.holding = None
        return f"You move the {obj} to the {r.name}."

    def _examine(self, target: str) -> str:
        if target in self.receptacles:
            r = self.receptacles[target]
            if self.location != r.name:
                return NOTHING
            if _kind(r.name) == "desklamp" or _kind(r.name) == "floorlamp":
                return f"This {r.name} is {'on' if r.on else 'off'}."
            return self._examine_receptacle(r)
        if target in self.objects and (self.holding == target or self._visible(target)):
            states = self.objects[target].states
            if not states:
                return f"There's nothing special about {target}."
            words = " and ".join(
                s if s != "cool" else "cool" for s in sorted(states, key=["hot", "cool", "clean"].index)
            )
            return f"This is a {words} {target}."
        return NOTHING

    def _visible(self, obj: str) -> bool:
        here = self._here()
        return here is not None and here.is_open and obj in here.contents

    def _use(self, target: str) -> str:
        r = self.receptacles.get(target)
        if r is None or self.location != r.name or _kind(r.name) not in ("desklamp", "floorlamp"):
            return NOTHING
        r.on = True
        return f"You turn on the {r.name}."

    def _treat(self, obj: str, target: str, state: str, kind: str, verb: str) -> str:
        r = self.receptacles.get(target)
        if r is None or self.location != r.name or _kind(r.name) != kind or self.holding != obj:
            return NOTHING
        self.objects[obj].states.add(state)
        if state == "hot":
            self.objects[obj].states.discard("cool")
        if state == "cool":
            self.objects[obj].states.discard("hot")
        return f"You {verb} the {obj} using the {r.name}."

    # ------------------------------------------------------------------ goal

    def won(self) -> bool:
        g = self.goal
        if g.task_type == "look_at_obj_in_light":
            here = self._here()
            lamp_ok = here is not None and here.on and (g.lamp is None or _kind(here.name) == g.lamp)
            return bool(lamp_ok and self.holding and _kind(self.holding) == g.object)
        placed = 0
        for r in self.receptacles.values():
            if _kind(r.name) != g.receptacle:
                continue
            for name in r.contents:
                if _kind(name) == g.object and (g.state is None or g.state in self.objects[name].states):
                    placed += 1
        return placed >= g.count


COMPILED_GAMES = ("game.z8", "game.ulx")


class TextWorldGame:
    """A game played through the real TextWorld engine: an official ALFWorld game file (`game.tw-pddl`,
    with ALFWorld's own wrappers, which need `pip install alfworld`) or a compiled TextWorld game (`.z8` /
    `.ulx`, as `tw-make` writes them, which needs only `pip install textworld`)."""

    def __init__(self, game_file: Path, max_steps: int = 50) -> None:
        try:
            import textworld
            import textworld.gym
        except ImportError:
            raise ConfigError(
                "playing TextWorld game files needs the textworld engine, which is not installed",
                hint="pip install textworld (and alfworld for the official game.tw-pddl files), "
                "or run with --sample",
            ) from None
        kwargs: dict[str, Any] = {}
        if game_file.suffix == ".tw-pddl":
            try:
                from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
            except ImportError:
                raise ConfigError(
                    "playing the official ALFWorld game files needs the alfworld engine, which is not installed",
                    hint="pip install alfworld (it builds the fast-downward planner), or run with --sample",
                ) from None
            kwargs["wrappers"] = [AlfredDemangler(shuffle=False), AlfredInfos]
        infos = textworld.EnvInfos(won=True, admissible_commands=True)
        env_id = textworld.gym.register_games(
            [str(game_file)],
            infos,
            batch_size=1,
            asynchronous=False,
            max_episode_steps=max_steps,
            **kwargs,
        )
        self._env = textworld.gym.make(env_id)

    def reset(self) -> str:
        obs, _infos = self._env.reset()
        return str(obs[0])

    def step(self, command: str) -> tuple[str, bool]:
        obs, _scores, _dones, infos = self._env.step([command])
        return str(obs[0]), bool(infos["won"][0])

    def close(self) -> None:
        self._env.close()


def game_file(folder: Path) -> Path | None:
    """The engine game file of a trial folder: ALFWorld's `game.tw-pddl`, else a compiled TextWorld game."""
    for name in ("game.tw-pddl", *COMPILED_GAMES):
        if (folder / name).is_file():
            return folder / name
    return None


def is_solvable(folder: Path) -> bool:
    """ALFWorld's rule for which games are played: the game file must exist and record `"solvable": true`
    (a file without the key is skipped too). A compiled TextWorld game counts as solvable when its
    `game.json` says so or, without the key, when it holds a walkthrough (tw-make writes one for every
    game it generates). The project-made sample games are always played."""
    if (folder / "game.skillopt.json").is_file() and game_file(folder) is None:
        return True
    path = game_file(folder)
    if path is None:
        return False
    try:
        data = json.loads(
            (path if path.suffix == ".tw-pddl" else path.with_suffix(".json")).read_text("utf-8")
        )
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict):
        return False
    if "solvable" in data or path.suffix == ".tw-pddl":
        return bool(data.get("solvable", False))
    return bool((data.get("metadata") or {}).get("walkthrough"))


def load_game(folder: Path, max_steps: int = 50) -> TextGame:
    """The game in one ALFWorld trial folder: the official `game.tw-pddl` or a compiled TextWorld game when
    present, else the sample's `game.skillopt.json`."""
    engine_file = game_file(folder)
    if engine_file is not None:
        return TextWorldGame(engine_file, max_steps=max_steps)
    mini = folder / "game.skillopt.json"
    if mini.is_file():
        return MiniAlfredGame(json.loads(mini.read_text(encoding="utf-8")))
    raise ConfigError(f"{folder} has no game file (game.tw-pddl, game.z8, game.ulx or game.skillopt.json)")
