"""The night's second phase: plan the replays, replay, train a candidate, veto it, propose it."""
