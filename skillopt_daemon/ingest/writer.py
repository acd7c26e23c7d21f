"""Turning source records into rows: sessions, turns, tool calls, and which file fed which session.

Every write is an upsert by the sources' stable keys (a session by tool and id, a turn or call by its key
within the session), so reading the same bytes twice stores nothing twice. The writer never commits: the
pipeline calls it inside the transaction that also moves the file's offset.

Counters that a list or a status line needs (turns, tool calls, first and last time) are folded in per
batch (`finish`), so one line appended to a long session costs what one line costs.
"""

from __future__ import annotations

import json
import operator
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.timeutil import (
    CANONICAL_ISO,
    parse_iso,
    plausible_timestamp,
    to_iso,
    too_early,
    utcnow_iso,
)
from skillopt_daemon.ingest.problems import problem_of_skip
from skillopt_daemon.ingest.signals import CALL_COLUMNS, TURN_COLUMNS, signals_json_of_rows
from skillopt_daemon.ingest.sources.base import (
    Record,
    SessionInfo,
    SkipRecord,
    ToolCallRecord,
    ToolResultRecord,
    TurnRecord,
)

# SessionInfo fields copied to the session row when a source sets them.
_TEXT_COLUMNS = ("project_path", "git_branch", "model", "entrypoint", "tool_version", "title")
# SessionInfo.extra keys stored as columns (or used for decisions), not in extra_json.
_EXTRA_AS_COLUMNS = {
    "is_replay",
    "skillopt_replay",
    "git_dirty",
    "git_pinned_at",
    "git_diff_hash",
    "redactions",
}


@dataclass
class Batch:
    """What one transaction changed, for the counters and follow-ups run before and after it commits."""

    touched: set[int] = field(default_factory=set)
    new_sessions: set[int] = field(default_factory=set)
    skipped: Counter[str] = field(default_factory=Counter)
    problems: Counter[str] = field(default_factory=Counter)
    times: dict[int, tuple[str, str]] = field(default_factory=dict)
    turns_added: Counter[int] = field(default_factory=Counter)
    calls_added: Counter[int] = field(default_factory=Counter)
    user_turn: set[int] = field(default_factory=set)
    redactions: dict[int, int] = field(default_factory=dict)  # session pk -> the file's running total
    last_session: int | None = None


@dataclass
class _SessionState:
    pk: int
    dropped: bool
    session_id: str
    stored: dict[str, Any] | None = None  # the session row as this writer last read or wrote it


# Every column a new row gets, so rows of one batch insert together whichever records made them.
_NEW_ROW = {
    "turns": {},
    "tool_calls": {
        "turn_key": None,
        "name": None,
        "input_summary": "",
        "timestamp": None,
        "exit_code": None,
        "is_error": None,
        "output_excerpt": None,
        "result_at": None,
    },
}


# Column order of the batch inserts (one executemany per table and batch): every key a pending row holds.
_INSERT_COLUMNS = {
    "turns": (
        *("session_pk", "key", "seq", "file_id", "role", "text", "timestamp", "parent_key"),
        *("is_meta", "model", "input_tokens", "output_tokens"),
    ),
    "tool_calls": ("session_pk", "key", "seq", "file_id", *_NEW_ROW["tool_calls"]),
}


def get_row(db: sqlite_utils.Database, table: str, pk: int) -> dict[str, Any]:
    """One row by id as a dict (`Table.get` without its schema look-ups, which dominate on hot paths)."""
    cur = db.execute(f"SELECT * FROM {table} WHERE id = ?", [pk])
    values = cur.fetchone()
    if values is None:
        raise LookupError(f"no row {pk} in {table}")
    return dict(zip([d[0] for d in cur.description], values, strict=True))


def update_row(db: sqlite_utils.Database, table: str, pk: int, values: dict[str, Any]) -> None:
    """Set `values` (column -> plain value) on the row `pk` of `table`."""
    if values:
        sets = ", ".join(f'"{name}" = ?' for name in values)
        db.execute(f"UPDATE {table} SET {sets} WHERE id = ?", [*values.values(), pk])


def merge_counts(old_json: str | None, new: Counter[str]) -> str:
    """A stored JSON count of skip reasons plus `new`, sorted so equal counts store equal text."""
    merged = Counter(json.loads(old_json or "{}"))
    merged.update(new)
    return json.dumps(dict(sorted(merged.items())))


class RecordWriter:
    """Stores source records as upserts by their stable keys. Call inside `with db.conn:`."""

    def __init__(self, db: sqlite_utils.Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self._sessions: dict[tuple[str, str], _SessionState] = {}
        self._next_seq: dict[tuple[str, int], int] = {}
        # New turns and tool calls of the current batch by (session pk, key), inserted by `finish`: one
        # insert per table and batch instead of one per record.
        self._pending: dict[str, dict[tuple[int, str], dict[str, Any]]] = {t: {} for t in _NEW_ROW}
        self._own_roots = [str(p) for p in (paths.workspaces_dir(), paths.data_dir())]
        self._own_workspace: dict[str, bool] = {}
        self._last_good_time: str | None = None
        # Per `apply`: its records; the keys they name, by (table, session id), worked out when a session
        # that may have stored rows first needs them; which of those keys the store holds; and the
        # sessions made in the current batch (they have no stored rows to look for).
        self._records: Sequence[Record] = ()
        self._batch_keys: dict[tuple[str, str], list[str]] | None = None
        self._stored: dict[tuple[str, int], dict[str, int | None]] = {}
        self._new_sessions: set[int] = set()

    def forget(self) -> None:
        """Drop caches after a rollback: they may name rows that were never committed."""
        self._sessions.clear()
        self._stored.clear()
        self._next_seq.clear()
        for rows in self._pending.values():
            rows.clear()

    # --- records ------------------------------------------------------------------------------------------

    def apply(self, tool: str, records: Sequence[Record], file_id: int | None, batch: Batch) -> None:
        """Store `records` of one file (`file_id`, None for none), noting in `batch` what they changed."""
        self._records, self._batch_keys = records, None
        self._stored.clear()
        self._new_sessions = batch.new_sessions
        state: _SessionState | None = None  # the session of the previous content record, if it still is
        for rec in records:
            if isinstance(rec, SkipRecord):
                batch.skipped[rec.reason] += 1
                problem = problem_of_skip(rec.reason)
                if problem:
                    batch.problems[problem] += 1
                continue
            if isinstance(rec, SessionInfo):
                pk = self._apply_session(tool, rec, batch)
                batch.touched.add(pk)
                batch.last_session = pk
                if rec.redactions is not None:  # a running total per file: the latest value is the file's
                    batch.redactions[pk] = int(rec.redactions)
                state = None
                continue
            if state is None or state.session_id != rec.session_id:  # records come in runs of one session
                state = self._session(tool, rec.session_id, batch)
                batch.touched.add(state.pk)
                batch.last_session = state.pk
            pk = state.pk
            if state.dropped:  # none of its content is kept, but it was active then
                self._note_time(pk, self._norm_time(rec.timestamp, batch), batch)
            elif isinstance(rec, TurnRecord):
                self._apply_turn(pk, rec, file_id, batch)
            elif isinstance(rec, ToolCallRecord):
                self._apply_call(pk, rec, file_id, batch)
            elif isinstance(rec, ToolResultRecord):
                self._apply_result(pk, rec, file_id, batch)

    def _apply_turn(self, pk: int, rec: TurnRecord, file_id: int | None, batch: Batch) -> None:
        ts = self._norm_time(rec.timestamp, batch)
        self._note_time(pk, ts, batch)
        values = {
            "role": rec.role,
            "text": rec.text,
            "timestamp": ts,
            "parent_key": rec.parent_key,
            "is_meta": int(rec.is_meta),
            "model": rec.model,
            "input_tokens": rec.input_tokens,
            "output_tokens": rec.output_tokens,
            "file_id": file_id,
        }
        if self._upsert("turns", pk, rec.session_id, rec.key, values):
            batch.turns_added[pk] += 1
        if rec.role == "user" and not rec.is_meta and rec.text.strip():
            batch.user_turn.add(pk)

    def _apply_call(self, pk: int, rec: ToolCallRecord, file_id: int | None, batch: Batch) -> None:
        ts = self._norm_time(rec.timestamp, batch)
        self._note_time(pk, ts, batch)
        values = {
            "turn_key": rec.turn_key,
            "name": rec.name,
            "input_summary": rec.input_summary,
            "timestamp": ts,
            "file_id": file_id,
        }
        if self._upsert("tool_calls", pk, rec.session_id, rec.key, values):
            batch.calls_added[pk] += 1

    def _apply_result(self, pk: int, rec: ToolResultRecord, file_id: int | None, batch: Batch) -> None:
        ts = self._norm_time(rec.timestamp, batch)
        self._note_time(pk, ts, batch)
        values: dict[str, Any] = {
            "exit_code": rec.exit_code,
            "is_error": None if rec.is_error is None else int(rec.is_error),
            "output_excerpt": rec.output_excerpt,
            "result_at": ts,
        }
        # A result that arrives first (or whose call was in a part of the log never seen) makes the row;
        # the call fills in the rest when it comes, and a result never moves the row to another file.
        if self._upsert("tool_calls", pk, rec.session_id, rec.call_key, values, file_id_if_new=file_id):
            batch.calls_added[pk] += 1

    def _upsert(
        self,
        table: str,
        pk: int,
        session_id: str,
        key: str,
        values: dict[str, Any],
        *,
        file_id_if_new: int | None = None,
    ) -> bool:
        """Update the row (session `pk`, `key`) of `table`, or make it with the next seq; True if new.

        A new row waits in `_pending` until `finish` inserts the batch's rows together; a later record
        with the same key in the same batch updates it there. Which keys are stored already is asked once
        per session and batch, for all the batch's keys together.
        """
        pending = self._pending[table].get((pk, key))
        if pending is not None:
            pending.update(values)
            return False
        if pk not in self._new_sessions:  # a session made in this batch has nothing stored yet
            row_id = self._stored_id(table, pk, session_id, key)
            if row_id is not None:
                update_row(self.db, table, row_id, values)
                return False
        self._pending[table][(pk, key)] = {
            **_NEW_ROW[table],
            "file_id": file_id_if_new,
            **values,
            "session_pk": pk,
            "key": key,
            "seq": self._seq(table, pk),
        }
        return True

    def _stored_id(self, table: str, pk: int, session_id: str, key: str) -> int | None:
        """The id of the stored row (session `pk`, `key`) of `table`, or None."""
        stored = self._stored.get((table, pk))
        if stored is None:
            if self._batch_keys is None:
                self._batch_keys = _keys_by_session(self._records)
            keys = self._batch_keys.get((table, session_id), ())
            stored = self._stored[(table, pk)] = self._stored_ids(table, pk, keys)
        row_id = stored.get(key)
        if row_id is None and key not in stored:  # not among the batch's keys asked about: ask now
            row = self.db.execute(
                f"SELECT id FROM {table} WHERE session_pk = ? AND key = ?", [pk, key]
            ).fetchone()
            row_id = None if row is None else row[0]
        return row_id

    def _stored_ids(self, table: str, pk: int, keys: Sequence[str]) -> dict[str, int | None]:
        """For each of `keys`, the id of its row of session `pk` in `table`, or None when it has none."""
        found: dict[str, int | None] = dict.fromkeys(keys)
        if keys:
            for key, row_id in self.db.execute(
                f"SELECT key, id FROM {table} WHERE session_pk = ? AND key IN (SELECT value FROM json_each(?))",
                [pk, json.dumps(list(found))],
            ):
                found[key] = row_id
        return found

    def _seq(self, table: str, pk: int) -> int:
        nxt = self._next_seq.get((table, pk))
        if nxt is None and pk in self._new_sessions:
            nxt = 1
        elif nxt is None:
            row = self.db.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {table} WHERE session_pk = ?", [pk])
            nxt = int(row.fetchone()[0]) + 1
        self._next_seq[(table, pk)] = nxt + 1
        return nxt

    # --- sessions -----------------------------------------------------------------------------------------

    def _session(self, tool: str, session_id: str, batch: Batch) -> _SessionState:
        cached = self._sessions.get((tool, session_id))
        if cached is not None:
            return cached
        rows = list(
            self.db.table("sessions").rows_where(
                "tool = ? AND session_id = ?", [tool, session_id], select="id, drop_reason"
            )
        )
        if rows:
            state = _SessionState(int(rows[0]["id"]), rows[0]["drop_reason"] is not None, session_id)
        else:
            now = utcnow_iso()
            sessions = self.db.table("sessions").insert(
                {"tool": tool, "session_id": session_id, "first_seen_at": now, "updated_at": now}
            )
            state = _SessionState(int(sessions.last_rowid or 0), False, session_id)
            batch.new_sessions.add(state.pk)
        self._sessions[(tool, session_id)] = state
        return state

    def _is_own_workspace(self, project: str) -> bool:
        known = self._own_workspace.get(project)
        if known is None:  # asked for every record's session: a user has few projects, remember them
            norm = os.path.normpath(project)
            known = any(norm == root or norm.startswith(root + os.sep) for root in self._own_roots)
            if len(self._own_workspace) < 10_000:
                self._own_workspace[project] = known
        return known

    def _apply_session(self, tool: str, info: SessionInfo, batch: Batch) -> int:
        state = self._session(tool, info.session_id, batch)
        if _times_only(info):  # what most lines of a transcript say about their session: nothing to merge
            for ts in (info.started_at, info.ended_at):
                self._note_time(state.pk, self._norm_time(ts, batch), batch)
            return state.pk
        if state.stored is None:
            state.stored = get_row(self.db, "sessions", state.pk)
        row = state.stored
        sets: dict[str, Any] = {
            name: getattr(info, name) for name in _TEXT_COLUMNS if getattr(info, name) is not None
        }
        if info.is_automation is not None:
            sets["is_automation"] = int(info.is_automation)
        pin = _pin_columns(info) if row["pinned_at"] is None else {}
        if pin:
            # The repo state when the session was FIRST seen: a file read again later does not move it
            # (and the pipeline may have pinned it since this writer read the row).
            row["pinned_at"] = self.db.execute(
                "SELECT pinned_at FROM sessions WHERE id = ?", [state.pk]
            ).fetchone()[0]
            if row["pinned_at"] is None:
                sets.update(pin)
        drop = self._drop_reason(info)
        if drop == "replay":
            sets["is_replay"] = 1
        extra = {k: v for k, v in info.extra.items() if k not in _EXTRA_AS_COLUMNS}
        if extra:
            sets["extra_json"] = json.dumps(
                {**json.loads(row["extra_json"] or "{}"), **extra}, sort_keys=True
            )
        changed = {k: v for k, v in sets.items() if row.get(k) != v}
        if changed:
            update_row(self.db, "sessions", state.pk, changed)
            row.update(changed)
        for ts in (info.started_at, info.ended_at):
            self._note_time(state.pk, self._norm_time(ts, batch), batch)
        if drop and not state.dropped:
            self._drop(state, drop)
        return state.pk

    def _drop_reason(self, info: SessionInfo) -> str | None:
        if (
            info.extra.get("skillopt_replay")
            or info.extra.get("is_replay")
            or (info.project_path and self._is_own_workspace(info.project_path))
        ):
            return "replay"
        if info.is_automation and not self.settings.ingest.keep_automation:
            return "automation"
        return None

    def _drop(self, state: _SessionState, reason: str) -> None:
        """Not user work: keep the row (so it is counted and not re-learned) but none of its content."""
        for table, rows in self._pending.items():
            for pending_key in [k for k in rows if k[0] == state.pk]:
                del rows[pending_key]
            self.db.execute(f"DELETE FROM {table} WHERE session_pk = ?", [state.pk])
        update_row(
            self.db,
            "sessions",
            state.pk,
            {"drop_reason": reason, "turn_count": 0, "tool_call_count": 0, "has_user_turn": 0},
        )
        state.dropped = True

    # --- times --------------------------------------------------------------------------------------------

    def _norm_time(self, value: str | None, batch: Batch) -> str | None:
        """A record's timestamp as canonical UTC, under the same rule the sources apply (see `timeutil`)."""
        if not value:
            return None
        if value == self._last_good_time:  # a line's records and its session info repeat one timestamp
            return value
        if not CANONICAL_ISO.match(value):  # sources normally hand over canonical text: no parsing then
            try:
                dt, had_zone = parse_iso(value)
            except (ValueError, TypeError):
                batch.problems["bad-timestamp"] += 1
                return None
            if not had_zone:
                batch.problems["timestamp-without-zone"] += 1
            value = to_iso(dt)
        if not plausible_timestamp(value):
            batch.problems["implausible-timestamp" if too_early(value) else "future-timestamp"] += 1
            return None
        self._last_good_time = value  # canonical and plausible (it stays so: the limit only moves later)
        return value

    def _note_time(self, pk: int, ts: str | None, batch: Batch) -> None:
        if ts is None:
            return
        lo, hi = batch.times.get(pk, (ts, ts))
        batch.times[pk] = (min(lo, ts), max(hi, ts))

    # --- counters -----------------------------------------------------------------------------------------

    def finish(self, batch: Batch, file_id: int | None = None) -> None:
        """Insert the batch's new rows and fold the batch into the session counters (incrementally: the
        cost does not depend on how long the session already is)."""
        fresh = self._fresh_signals(batch)
        for table, rows in self._pending.items():
            if rows:
                columns = _INSERT_COLUMNS[table]
                self.db.conn.executemany(
                    f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    [[row[c] for c in columns] for row in rows.values()],
                )
                rows.clear()
        if file_id is not None:
            for pk in sorted(batch.touched):
                self.db.execute(
                    "INSERT INTO file_sessions (file_id, session_pk, redactions) VALUES (?, ?, ?) "
                    "ON CONFLICT(file_id, session_pk) DO UPDATE SET redactions = "
                    "MAX(redactions, excluded.redactions)",
                    [file_id, pk, batch.redactions.get(pk, 0)],
                )
        now = utcnow_iso()
        for pk in batch.touched:
            lo, hi = batch.times.get(pk, (None, None))
            self.db.execute(
                "UPDATE sessions SET "
                "started_at = CASE WHEN :lo IS NOT NULL AND (started_at IS NULL OR :lo < started_at) "
                "THEN :lo ELSE started_at END, "
                "ended_at = CASE WHEN :hi IS NOT NULL AND (ended_at IS NULL OR :hi > ended_at) "
                "THEN :hi ELSE ended_at END, "
                "turn_count = CASE WHEN drop_reason IS NULL THEN turn_count + :turns ELSE 0 END, "
                "tool_call_count = CASE WHEN drop_reason IS NULL THEN tool_call_count + :calls ELSE 0 END, "
                "has_user_turn = CASE WHEN drop_reason IS NULL AND (has_user_turn = 1 OR :user) "
                "THEN 1 ELSE 0 END, "
                "signals_stale = :fresh IS NULL, signals_json = COALESCE(:fresh, signals_json), "
                "redaction_count = (SELECT COALESCE(SUM(redactions), 0) FROM file_sessions f "
                "WHERE f.session_pk = sessions.id), "
                "updated_at = :now WHERE id = :pk",
                {
                    "lo": lo,
                    "hi": hi,
                    "turns": batch.turns_added[pk],
                    "calls": batch.calls_added[pk],
                    "user": int(pk in batch.user_turn),
                    "now": now,
                    "pk": pk,
                    "fresh": fresh.get(pk),
                },
            )
        if batch.skipped and batch.last_session is not None:
            (old,) = self.db.execute(
                "SELECT skipped_json FROM sessions WHERE id = ?", [batch.last_session]
            ).fetchone()
            update_row(
                self.db, "sessions", batch.last_session, {"skipped_json": merge_counts(old, batch.skipped)}
            )

    def _fresh_signals(self, batch: Batch) -> dict[int, str]:
        """`signals_json` of the sessions this batch created, from the rows it is about to insert.

        Those rows are all such a session has, so they are what `signals.update_sessions` would read back
        after the commit; a backfill, where nearly every session is new, skips that second read. A session
        that grew in an earlier batch is marked stale instead and recomputed from the store.
        """
        new = {s.pk for s in self._sessions.values() if s.pk in batch.new_sessions and not s.dropped}
        if not new:
            return {}
        rows: dict[int, tuple[list[Any], list[Any]]] = {pk: ([], []) for pk in new}
        for (pk, _), row in self._pending["turns"].items():  # in seq order, as they were made
            if pk in rows:
                rows[pk][0].append(_turn_columns(row))
        for (pk, _), row in self._pending["tool_calls"].items():
            if pk in rows:
                rows[pk][1].append(_call_columns(row))
        return {pk: signals_json_of_rows(turns, calls) for pk, (turns, calls) in rows.items()}


def _keys_by_session(records: Sequence[Record]) -> dict[tuple[str, str], list[str]]:
    """The row keys `records` write, by (table, session id)."""
    out: dict[tuple[str, str], list[str]] = {}
    for rec in records:
        if isinstance(rec, TurnRecord):
            out.setdefault(("turns", rec.session_id), []).append(rec.key)
        elif isinstance(rec, ToolCallRecord):
            out.setdefault(("tool_calls", rec.session_id), []).append(rec.key)
        elif isinstance(rec, ToolResultRecord):
            out.setdefault(("tool_calls", rec.session_id), []).append(rec.call_key)
    return out


# Every SessionInfo field but the session, its times and `extra` (a field added later is covered too).
_NOT_TIMES = tuple(
    f.name for f in fields(SessionInfo) if f.name not in ("session_id", "started_at", "ended_at", "extra")
)


_not_times = operator.attrgetter(*_NOT_TIMES)
_turn_columns = operator.itemgetter(*TURN_COLUMNS)
_call_columns = operator.itemgetter(*CALL_COLUMNS)
_NONE = (None,) * len(_NOT_TIMES)


def _times_only(info: SessionInfo) -> bool:
    """Whether `info` carries nothing but times (the general path would then change nothing else)."""
    return not info.extra and _not_times(info) == _NONE


def _pin_columns(info: SessionInfo) -> dict[str, Any]:
    """The repo pin a source reported: the commit the log names, or what the source read from the repo."""
    pin: dict[str, Any] = {}
    if info.git_commit:
        pin["repo_commit"] = info.git_commit
        pin["repo_pin_source"] = "log"
    if info.extra.get("git_pinned_at"):
        # The source read the repo itself when it first saw the session.
        pin["repo_pin_source"] = "repo"
        pin["pinned_at"] = str(info.extra["git_pinned_at"])
        if info.extra.get("git_dirty") is not None:
            pin["repo_dirty"] = int(bool(info.extra["git_dirty"]))
        if info.extra.get("git_diff_hash"):
            pin["repo_diff_hash"] = str(info.extra["git_diff_hash"])
    return pin
