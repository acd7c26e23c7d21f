#!/bin/sh
# Hook entry point: hand the hook's JSON (on stdin) to `skillopt notify EVENT`, which drops a note for the
# skillopt daemon and returns. A hook must never break or slow down the agent session, so this script
# always exits 0, gives skillopt a few seconds at most, and keeps stdout empty (a SessionStart hook's
# stdout would be added to the model's context).
#
# Usage: skillopt-notify.sh session-start|session-end [TOOL]
# The skillopt executable is looked up in $SKILLOPT_BIN, then on PATH, then in the usual user folders.

event="${1:-session-end}"
tool="${2:-claude-code}"

find_skillopt() {
    if [ -n "${SKILLOPT_BIN:-}" ] && [ -x "${SKILLOPT_BIN}" ]; then
        printf '%s\n' "${SKILLOPT_BIN}"
        return 0
    fi
    found=$(command -v skillopt 2>/dev/null) && [ -n "$found" ] && { printf '%s\n' "$found"; return 0; }
    for candidate in "${HOME:-}/.local/bin/skillopt" "${HOME:-}/.local/pipx/venvs/skillopt/bin/skillopt" \
        /opt/homebrew/bin/skillopt /usr/local/bin/skillopt; do
        if [ -x "$candidate" ]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

# `skillopt install claude-code` is the other route to the same hooks: where it placed them (the user's
# settings, or this project's), they report this session already, and this plugin's hook stays quiet so
# the session is not reported twice. `skillopt doctor` names the double install.
direct_install() {
    for settings in "${CLAUDE_CONFIG_DIR:-${HOME:-}/.claude}/settings.json" \
        "${CLAUDE_PROJECT_DIR:-.}/.claude/settings.local.json"; do
        if [ -f "$settings" ] && grep -q "notify $event --tool $tool" "$settings" 2>/dev/null; then
            return 0
        fi
    done
    return 1
}
if [ "$tool" = "claude-code" ] && direct_install; then
    echo "skillopt: \`skillopt install claude-code\` already reports this session; the plugin's hook does nothing (keep one of the two: see \`skillopt doctor\`)" >&2
    exit 0
fi

bin=$(find_skillopt) || {
    echo "skillopt: the 'skillopt' command was not found on PATH; this session was not recorded (install skillopt or set SKILLOPT_BIN)" >&2
    exit 0
}

# skillopt's start-up can take a second or more on a cold cache, and Claude Code does not wait long for a
# SessionEnd hook: read the hook's input now, hand it to skillopt in the background, and return at once.
payload=$(cat)
run_notify() {
    if command -v timeout >/dev/null 2>&1; then
        printf '%s\n' "$payload" | timeout 30 "$bin" notify "$event" --tool "$tool" >/dev/null 2>&1
    else
        printf '%s\n' "$payload" | "$bin" notify "$event" --tool "$tool" >/dev/null 2>&1
    fi
}
if [ "${SKILLOPT_HOOK_FOREGROUND:-}" = "1" ]; then
    run_notify || echo "skillopt: 'skillopt notify $event' failed; the daemon will still find this session on its next scan" >&2
else
    ( run_notify & ) >/dev/null 2>&1
fi
exit 0
