"""The gate's settings and the words it is spoken in: which gate (`kind`), which sequential test, arms,
tiers, outcomes. One place for each, imported by every rule."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

GateKind = Literal["strict", "paired", "sequential"]
GateTest = Literal["sign-flip", "e-value"]
# What an item stakes in the e-value test (`stake`).
Bet = Literal["size", "sign"]
Tier = Literal["proven", "likely"]
Outcome = Literal["accepted", "rejected", "pending"]
Arm = Literal["incumbent", "candidate"]
Metric = Literal["hard", "soft", "mix"]
# item id -> the item's scores, one per repeat
ScoreTable = dict[str, list[float]]
Request = tuple[str, Arm]


class GateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: GateKind = "sequential"
    confidence: float = Field(
        default=0.95,
        gt=0.5,
        lt=1.0,
        description="1 - the false-accept rate the gate allows (sequential: W must reach 1/(1-confidence))",
    )
    repeats: int = Field(
        default=3,
        ge=1,
        description="paired/strict: runs per validation item and skill; sequential: the cap per arm and item",
    )
    veto_confidence: float = Field(
        default=0.9,
        gt=0.5,
        lt=1.0,
        description="sequential: level of the evidence that the candidate is worse",
    )
    first_pairs: int = Field(
        default=2,
        ge=1,
        description="sequential: pairs every new item gets before deciding whether it needs more",
    )
    spending: list[float] = Field(
        default=[0.625, 0.375],
        min_length=1,
        description="sequential: shares of the false-accept rate spent per session (night); their count is "
        "how many sessions a pending candidate may use",
    )
    test: GateTest = Field(
        default="sign-flip",
        description="sequential: `sign-flip` (exact test, error spent over `spending` sessions) or `e-value` "
        "(anytime-valid betting test: evidence accumulates over any number of sessions)",
    )
    bet: Bet = Field(
        default="size",
        description="e-value: what each item stakes, `size` (its mean paired difference, half of it its sign: "
        "a loss in every pair outweighs a gain in one) or `sign` (only which way it moved); evidence keeps the "
        "bet it began with",
    )
    likely_confidence: float | None = Field(
        default=None,
        gt=0.5,
        lt=1.0,
        description="e-value: a lower tier; a candidate whose evidence reaches this level but not `confidence` "
        "is accepted as `likely` (for a person to review, never to install unreviewed)",
    )
    first_share: float = Field(
        default=0.8,
        gt=0,
        le=1,
        description="e-value: share of the error rate the first candidate tested against an incumbent gets; "
        "later candidates share the rest, each half the one before",
    )
    metric: Metric = "hard"
    hard_weight: float = Field(
        default=0.5, ge=0, le=1, description="weight of the hard score when metric=mix"
    )
    no_regression: bool = Field(
        default=True,
        description="paired: veto when an item the incumbent always passed now always fails; "
        "sequential: veto when the paired evidence says the candidate is worse",
    )
    min_delta: float = Field(default=0.0, ge=0, description="the improvement the bound must exceed")

    @field_validator("spending")
    @classmethod
    def _positive_shares(cls, shares: list[float]) -> list[float]:
        if any(not share > 0 for share in shares):
            raise ValueError("every spending share must be positive")
        return shares

    @model_validator(mode="after")
    def _tiers(self) -> GateConfig:
        if self.likely_confidence is not None:
            if self.test != "e-value":
                raise ValueError("likely_confidence needs test = 'e-value'")
            if not self.likely_confidence < self.confidence:
                raise ValueError("likely_confidence must be below confidence")
        return self

    @classmethod
    def anytime(cls, **overrides: Any) -> GateConfig:
        """The gate for evidence gathered over an open-ended number of sessions (the nightly cycle's): the
        sequential gate with the anytime-valid e-value test, false accepts at most 5% (`proven`) and a
        lower tier at 10% (`likely`), one pair per item.

        One pair, because a replay is what a night pays for: the test's unit of evidence is the item (repeats
        of one item are strongly correlated with a near-deterministic agent), so a second and third pair of
        the same item buy little evidence at the price of a new item. `docs/performance.md` measures the
        trade with `benchmarks/gate.py`."""
        return cls(
            **{
                "kind": "sequential",
                "test": "e-value",
                "likely_confidence": 0.9,
                "first_pairs": 1,
                "repeats": 1,
                **overrides,
            }
        )

    def candidate_share(self, index: int) -> float:
        """The share of the error rate of the `index`-th (0-based) candidate tested against one incumbent.
        The shares add up to 1, so all candidates ever tested against it together keep the promised rate."""
        if index <= 0:
            return self.first_share
        return (1 - self.first_share) * 0.5**index


def item_score(hard: float, soft: float, cfg: GateConfig) -> float:
    if cfg.metric == "hard":
        return hard
    if cfg.metric == "soft":
        return soft
    return cfg.hard_weight * hard + (1 - cfg.hard_weight) * soft
