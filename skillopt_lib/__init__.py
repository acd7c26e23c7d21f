"""skillopt: train the natural-language skills of frozen LLM coding agents.

The library half holds no database and no daemon: a skill document, the edits the optimizer makes to it,
the environments it is trained on, the backends that play the agent and the optimizer, and the trainer.

    import skillopt_lib
    result = skillopt_lib.train("house-style", "train.toml", run_dir="runs/demo")
    print(result.summary["best_val"], result.best_skill.doc.body)
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from skillopt_lib.trainer import PendingCandidate, Trainer, TrainResult, evaluate_skill, train


def __getattr__(name: str) -> Any:
    # Lazy, so that `import skillopt_lib` stays cheap for the daemon and the SDKs load only when training.
    if name in ("PendingCandidate", "Trainer", "TrainResult", "train", "evaluate_skill"):
        from skillopt_lib import trainer

        return getattr(trainer, name)
    if name == "TrainConfig":
        from skillopt_lib.config import TrainConfig

        return TrainConfig
    raise AttributeError(f"module 'skillopt' has no attribute {name!r}")


__all__ = [
    "PendingCandidate",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "evaluate_skill",
    "train",
    "__version__",
]
