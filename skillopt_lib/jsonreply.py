"""Reading the JSON object out of a model's reply.

Models asked for JSON still answer in fences, with prose around the object, smart quotes, trailing commas,
Python literals or a cut-off end. `json_repair` mends all of these; what is left to decide here is which
value counts as the answer. Callers re-ask or give up on a ValueError, so a reply is never silently empty.
"""

from __future__ import annotations

from typing import Any

import json_repair


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's reply (the first one when the reply holds several).

    Raises ValueError, with a message fit to show the model when re-asking, when there is no object.
    """
    data = json_repair.loads(text) if text.strip() else ""
    if isinstance(data, list):
        data = next((v for v in data if isinstance(v, dict)), data)
    if isinstance(data, dict):
        return data
    if data == "" or data is None:
        raise ValueError("no JSON object found")
    raise ValueError("the answer is JSON but not an object")
