"""A training run, in parts: `loop.py` (the `Trainer`: baseline, steps, epoch ends, slow and meta updates,
the finish), `step.py` (one step as named phases), `deciding.py` (how a candidate is decided: the gate, the ledger, the pending candidate), `state.py` (the checkpoint, a carried candidate, and the values a run returns), `records.py`
(what each history line holds: `TrainResult.steps`), and `api.py` (`train` and `evaluate_skill` in one
call). `skillopt_lib.trainer` is where callers import them from.
"""
