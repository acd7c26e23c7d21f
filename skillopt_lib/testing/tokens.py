"""The scripted model server's token estimate: about four characters a token.

Why it is its own module: the server's usage figures (input, output, `count_tokens`) and the prompt-cache
model's cached prefixes must be counted with the same rule, or a reply could report more cached tokens than
input tokens. A deterministic estimate also keeps usage assertions stable across runs.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4


def tokens_in_chars(chars: int) -> int:
    """Tokens in a text of ``chars`` characters (0 for none)."""
    return math.ceil(max(0, chars) / CHARS_PER_TOKEN)


def estimate_tokens(text: str) -> int:
    """Tokens in ``text``; at least one, as the providers never report an empty prompt or reply."""
    return max(1, tokens_in_chars(len(text)))
