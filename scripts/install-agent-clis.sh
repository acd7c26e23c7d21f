#!/usr/bin/env bash
# Installs the pinned agent CLIs that the test suite drives against its scripted model server.
# Idempotent: does nothing when the pinned versions are already present. Skips (exit 0) without npm.
set -euo pipefail
dir="${1:-.cache/agent-clis}"
CLAUDE_VERSION="2.1.197"
CODEX_VERSION="0.171.0"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: the tests that drive the real claude and codex CLIs will be skipped" >&2
  exit 0
fi
stamp="$dir/.installed-$CLAUDE_VERSION-$CODEX_VERSION"
if [ -f "$stamp" ] && [ -x "$dir/node_modules/.bin/claude" ] && [ -x "$dir/node_modules/.bin/codex" ]; then
  exit 0
fi
mkdir -p "$dir"
npm install --silent --no-audit --no-fund --prefix "$dir" \
  "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION"
touch "$stamp"
