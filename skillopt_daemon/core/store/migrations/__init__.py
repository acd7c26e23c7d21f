"""Numbered migrations, applied in order and never edited once released: add a new module instead.

Each module `mNNN_<what>.py` defines `migrate(db)`. Add it to MIGRATIONS below.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils

from skillopt_daemon.core.store.migrations import (
    m001_registry,
    m002_ingest,
    m003_night,
    m004_integration_targets,
    m005_labels,
    m006_check_verdicts,
    m007_evidence,
    m009_notes_and_signals,
    m010_rule_outcomes,
    m011_replay_caps,
    m012_gate_budgets,
    m013_family_grouping,
    m014_shared_rules,
)

Migration = Callable[[sqlite_utils.Database], None]

MIGRATIONS: list[tuple[str, Migration]] = [
    ("m001_registry", m001_registry.migrate),
    ("m002_ingest", m002_ingest.migrate),
    ("m003_night", m003_night.migrate),
    ("m004_integration_targets", m004_integration_targets.migrate),
    ("m005_labels", m005_labels.migrate),
    ("m006_check_verdicts", m006_check_verdicts.migrate),
    ("m007_evidence", m007_evidence.migrate),
    ("m009_notes_and_signals", m009_notes_and_signals.migrate),
    ("m010_rule_outcomes", m010_rule_outcomes.migrate),
    ("m011_replay_caps", m011_replay_caps.migrate),
    ("m012_gate_budgets", m012_gate_budgets.migrate),
    ("m013_family_grouping", m013_family_grouping.migrate),
    ("m014_shared_rules", m014_shared_rules.migrate),
]
