"""A team learns together: a verified rule shared through git, re-proved on each teammate's own work.

Git is the channel; there is no server of skillopt's own. `channel` keeps the local clone of the team
repository and its branches, `policy` reads who may publish what (`.skillopt/team.toml` on the team's main
branch), `sanitise` builds exactly what leaves the machine, `publish` commits and pushes it, `pull` brings
teammates' rules home as untrusted candidates for the night, `verdicts` writes and tallies each member's
verdict on a shared rule, and `recognise` registers skillopt rules committed in a project. See
`docs/team.md`.
"""
