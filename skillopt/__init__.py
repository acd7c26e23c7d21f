"""skillopt: train the natural-language skills of frozen LLM coding agents.

The library half holds no database and no daemon: a skill document, the edits the optimizer makes to it,
the environments it is trained on, the backends that play the agent and the optimizer, and the trainer.
"""

__version__ = "0.1.0"
