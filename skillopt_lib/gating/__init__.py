"""The acceptance gate's parts, each in its own module; `skillopt_lib.gate` composes them (`Gate`) and is
what callers import.

- `config.py`: the gate's settings (`GateConfig`) and the words it is spoken in (kinds, tests, arms).
- `scores.py`: the statistics every rule leans on (exact sign-flip tails, Student t, the e-value bettor).
- `evidence.py`: the sequential gate's paired evidence, carried from one session (night) to the next.
- `decision.py`: a verdict (`GateDecision`), the protocols a decision rule follows, and `GateStats`,
  the figures a reader may ask of any rule.
- one module per decision rule, each with the figures it reports typed: `strict.py`, `paired.py`,
  `signflip.py` and `evalue.py` (the two sequential tests share `sequential.py`).
"""
