"""The scripted server's prompt caches, checked request by request against the providers' documented rules.

The real `anthropic` and `openai` SDKs talk to the server, so what is checked is what a client (and the
agent CLIs built on the same protocols) reads in `usage`. A test clock moves time, so lifetimes are checked
without sleeping.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

import anthropic
import openai
import pytest

from skillopt_lib.testing.prompt_cache import (
    ANTHROPIC_LOOKBACK_BLOCKS,
    OPENAI_STEP_TOKENS,
    PromptCache,
    anthropic_min_tokens,
)
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.agent_clis import DEFAULT_API_KEY as SCRIPTED_API_KEY

SONNET = "claude-sonnet-4-6"
EPHEMERAL = {"type": "ephemeral"}
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}
# About 2,400 tokens: over Sonnet's 1,024-token minimum, under Haiku 4.5's 4,096.
LONG = "House rules. " + " ".join(f"Rule {i}: check the units of every figure." for i in range(230))


class Clock:
    """Seconds that only move when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> Any:
    with ScriptedServer(expected_key=None, clock=clock) as s:
        yield s


def claude(server: ScriptedServer, key: str = SCRIPTED_API_KEY) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key=key, max_retries=0)


def gpt(server: ScriptedServer, key: str = SCRIPTED_API_KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url_openai, api_key=key, max_retries=0)


def system(text: str = LONG, marker: dict[str, str] | None = EPHEMERAL) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marker is not None:
        block["cache_control"] = marker
    return [block]


def ask(client: anthropic.Anthropic, messages: list[Any], model: str = SONNET, **kw: Any) -> Any:
    """Send a Messages request; returns its usage after checking it adds up to the prompt's token count."""
    kw.setdefault("system", system())
    usage = client.messages.create(model=model, max_tokens=64, messages=messages, **kw).usage
    counted = client.messages.count_tokens(model=model, messages=messages, **kw).input_tokens
    total = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    assert total == counted, (usage, counted)  # input_tokens is only the part after the last breakpoint
    return usage


def user(text: str, marker: dict[str, str] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marker is not None:
        block["cache_control"] = marker
    return {"role": "user", "content": [block]}


# ------------------------------------------------------------------------------------------ Anthropic


def test_the_first_request_writes_the_prefix_and_the_next_one_reads_it(server: ScriptedServer) -> None:
    client = claude(server)
    first = ask(client, [user("What is 2 + 2?")])
    second = ask(client, [user("And 3 + 3?")])
    assert first.cache_creation_input_tokens > 1024 and first.cache_read_input_tokens == 0
    assert first.cache_creation.ephemeral_5m_input_tokens == first.cache_creation_input_tokens
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0
    assert second.input_tokens < 20  # only the question after the system prompt is fresh input


def test_a_new_last_turn_reads_the_earlier_turn_through_the_lookback_and_writes_only_the_new_part(
    server: ScriptedServer,
) -> None:
    """Claude Code's pattern: a marker on the system prompt and one on the newest turn, moved every turn."""
    client = claude(server)
    turn1 = [user("Summarise the rules. " + "Be thorough. " * 40, EPHEMERAL)]
    first = ask(client, turn1)
    turn2 = [
        user("Summarise the rules. " + "Be thorough. " * 40),  # the marker moved off this block
        {"role": "assistant", "content": "They are about units. " * 30},
        user("Now list the exceptions.", EPHEMERAL),
    ]
    second = ask(client, turn2)
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens  # all of turn 1
    assert 0 < second.cache_creation_input_tokens < 200  # the reply and the new question only
    third = ask(client, [*turn2[:2], user("Now list the exceptions."), user("Thanks.", EPHEMERAL)])
    assert (
        third.cache_read_input_tokens == second.cache_read_input_tokens + second.cache_creation_input_tokens
    )


def test_the_lookback_reaches_twenty_blocks_before_a_breakpoint_and_no_further(
    server: ScriptedServer,
) -> None:
    client = claude(server)
    head = [{"type": "text", "text": f"Document part {i}. " * 5} for i in range(3)]
    marked = [dict(head[0]), dict(head[1]), dict(head[2], cache_control=EPHEMERAL)]
    unmarked = system(marker=None)  # one breakpoint per request: the lookback is the only way back
    written = ask(client, [{"role": "user", "content": marked}], system=unmarked).cache_creation_input_tokens

    def extended(extra: int, word: str) -> Any:
        tail = [{"type": "text", "text": f"{word} {i}."} for i in range(extra)]
        tail[-1]["cache_control"] = EPHEMERAL
        return ask(client, [{"role": "user", "content": [*head, *tail]}], system=unmarked)

    assert extended(ANTHROPIC_LOOKBACK_BLOCKS, "note").cache_read_input_tokens == written
    missed = extended(ANTHROPIC_LOOKBACK_BLOCKS + 1, "remark")
    assert missed.cache_read_input_tokens == 0 and missed.cache_creation_input_tokens > written


def test_each_breakpoint_is_looked_up_so_the_system_prompt_still_reads_past_the_lookback(
    server: ScriptedServer,
) -> None:
    """A turn far past any cached boundary still reads the system prompt at the system's own breakpoint."""
    client = claude(server)
    prefix = ask(client, [user("Hello.")], system=system()).cache_creation_input_tokens
    many = [{"type": "text", "text": f"Log line {i}."} for i in range(ANTHROPIC_LOOKBACK_BLOCKS + 10)]
    many[-1]["cache_control"] = EPHEMERAL
    usage = ask(client, [{"role": "user", "content": many}])
    assert usage.cache_read_input_tokens == prefix > 1024  # the system prompt, from its own breakpoint
    assert usage.cache_creation_input_tokens > 0  # the log lines, cached for the next turn


def test_prompts_under_the_models_minimum_are_not_cached(server: ScriptedServer) -> None:
    client = claude(server)
    for _ in range(2):
        short = ask(client, [user("Hi.")], system=system("Be brief."))
        assert (short.cache_creation_input_tokens, short.cache_read_input_tokens) == (0, 0)
    # LONG is over Sonnet's minimum (1,024 tokens) but under Haiku 4.5's (4,096): Haiku caches nothing.
    assert (
        anthropic_min_tokens("claude-haiku-4-5-20251001") == 4096 == anthropic_min_tokens("claude-opus-4-6")
    )
    assert anthropic_min_tokens("claude-3-5-haiku-20241022") == 2048 and anthropic_min_tokens(SONNET) == 1024
    haiku = "claude-haiku-4-5-20251001"
    for _ in range(2):
        usage = ask(client, [user("Hi.")], model=haiku)
        assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
    assert ask(client, [user("Hi.")]).cache_creation_input_tokens > 1024


def test_an_entry_expires_five_minutes_after_its_last_hit(server: ScriptedServer, clock: Clock) -> None:
    client = claude(server)
    written = ask(client, [user("One.")]).cache_creation_input_tokens
    clock.advance(299)
    assert ask(client, [user("Two.")]).cache_read_input_tokens == written  # and the hit refreshes it
    clock.advance(299)
    assert ask(client, [user("Three.")]).cache_read_input_tokens == written  # 598 s after writing
    clock.advance(301)
    late = ask(client, [user("Four.")])
    assert late.cache_read_input_tokens == 0 and late.cache_creation_input_tokens == written


def test_a_one_hour_entry_outlives_the_five_minute_one(server: ScriptedServer, clock: Clock) -> None:
    client = claude(server)
    hour = ask(client, [user("One.")], system=system(marker=ONE_HOUR))
    assert hour.cache_creation.ephemeral_1h_input_tokens == hour.cache_creation_input_tokens > 0
    assert hour.cache_creation.ephemeral_5m_input_tokens == 0
    five = ask(client, [user("One.")], system=system(LONG + " Also rule B.", EPHEMERAL))
    clock.advance(3000)
    assert ask(client, [user("Two.")], system=system(marker=ONE_HOUR)).cache_read_input_tokens > 0
    missed = ask(client, [user("Two.")], system=system(LONG + " Also rule B.", EPHEMERAL))
    assert missed.cache_read_input_tokens == 0
    assert missed.cache_creation_input_tokens == five.cache_creation_input_tokens
    clock.advance(3601)
    assert ask(client, [user("Three.")], system=system(marker=ONE_HOUR)).cache_read_input_tokens == 0


def test_the_cache_is_per_model_and_per_key(server: ScriptedServer) -> None:
    client = claude(server)
    written = ask(client, [user("One.")]).cache_creation_input_tokens
    other_model = ask(client, [user("One.")], model="claude-opus-4-1")
    assert other_model.cache_read_input_tokens == 0 and other_model.cache_creation_input_tokens == written
    other_key = ask(claude(server, key="sk-another-account"), [user("One.")])
    assert other_key.cache_read_input_tokens == 0
    assert ask(client, [user("Two.")]).cache_read_input_tokens == written


def test_top_level_cache_control_marks_the_last_block(server: ScriptedServer) -> None:
    """Automatic caching: one marker on the request follows the conversation as it grows."""
    client = claude(server)
    auto = {"extra_body": {"cache_control": EPHEMERAL}, "system": system(marker=None)}
    first = ask(client, [user("Question one.")], **auto)
    turn2 = [user("Question one."), {"role": "assistant", "content": "Answer."}, user("Question two.")]
    second = ask(client, turn2, **auto)
    assert first.cache_creation_input_tokens > 1024 and first.input_tokens < 10
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens


def test_more_than_four_breakpoints_are_refused(server: ScriptedServer) -> None:
    client = claude(server)
    blocks = [{"type": "text", "text": f"part {i}", "cache_control": EPHEMERAL} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="A maximum of 4 blocks with cache_control"):
        client.messages.create(model=SONNET, max_tokens=8, messages=[{"role": "user", "content": blocks}])


def test_streamed_replies_carry_the_cache_figures_in_message_start(server: ScriptedServer) -> None:
    client = claude(server)
    ask(client, [user("One.")])
    with client.messages.stream(
        model=SONNET, max_tokens=64, system=system(), messages=[user("Two.")]
    ) as stream:
        final = stream.get_final_message()
    assert final.usage.cache_read_input_tokens > 1024


# ------------------------------------------------------------------------------------------ OpenAI


def chat(client: openai.OpenAI, question: str, sys_text: str = LONG, **kw: Any) -> Any:
    reply = client.chat.completions.create(
        model=kw.pop("model", "gpt-4.1"),
        messages=[{"role": "system", "content": sys_text}, {"role": "user", "content": question}],
        **kw,
    )
    assert reply.usage is not None and reply.usage.prompt_tokens_details is not None
    return reply.usage


def cached(usage: Any) -> int:
    details = getattr(usage, "prompt_tokens_details", None) or usage.input_tokens_details
    return int(details.cached_tokens or 0)


def test_openai_caches_the_longest_repeated_prefix_in_128_token_steps(server: ScriptedServer) -> None:
    client = gpt(server)
    first = chat(client, "What is 2 + 2?")
    second = chat(client, "And what is 3 + 3?")
    shared = len("system\n" + LONG + "\nuser\n") / 4  # tokens the two prompts have in common
    assert cached(first) == 0
    assert cached(second) % OPENAI_STEP_TOKENS == 0 and cached(second) >= 1024
    assert shared - OPENAI_STEP_TOKENS < cached(second) <= shared  # the longest whole step of the prefix
    assert cached(second) < second.prompt_tokens  # prompt_tokens counts the cached part too


def test_openai_does_not_cache_prompts_under_1024_tokens(server: ScriptedServer) -> None:
    client = gpt(server)
    almost = LONG[: 4 * 1000]  # about 1,000 tokens
    for _ in range(3):
        assert cached(chat(client, "Hi.", almost)) == 0
    assert chat(client, "Hi.", almost).prompt_tokens < 1024


def test_responses_report_cached_tokens_on_a_repeated_prefix(server: ScriptedServer) -> None:
    """Codex's API: instructions and tools come before the input, so a longer input still reads them."""
    client = gpt(server)
    tools: Any = [{"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {}}}]
    first = client.responses.create(model="gpt-5.5", instructions=LONG, tools=tools, input="List the files.")
    second = client.responses.create(
        model="gpt-5.5",
        instructions=LONG,
        tools=tools,
        input=[
            {"role": "user", "content": "List the files."},
            {"role": "assistant", "content": "Here they are."},
            {"role": "user", "content": "Now count them."},
        ],
    )
    assert first.usage is not None and second.usage is not None
    assert cached(first.usage) == 0
    assert 1024 <= cached(second.usage) < second.usage.input_tokens
    with client.responses.stream(model="gpt-5.5", instructions=LONG, tools=tools, input="Again.") as stream:
        streamed = stream.get_final_response()
    assert streamed.usage is not None and cached(streamed.usage) >= 1024


def test_openai_entries_expire_when_idle_and_never_outlive_an_hour(
    server: ScriptedServer, clock: Clock
) -> None:
    client = gpt(server)
    chat(client, "One.")
    clock.advance(299)
    assert cached(chat(client, "Two.")) > 0
    clock.advance(301)
    assert cached(chat(client, "Three.")) == 0  # five minutes without use
    for _ in range(15):  # kept warm every four minutes...
        clock.advance(240)
        hit = cached(chat(client, "Again."))
    assert hit == 0  # ...but gone an hour after it was written
    clock.advance(1)
    assert cached(chat(client, "Again.")) > 0


def test_extended_retention_keeps_a_prefix_for_a_day(server: ScriptedServer, clock: Clock) -> None:
    client = gpt(server)
    chat(client, "One.", prompt_cache_retention="24h")
    clock.advance(20 * 3600)
    assert cached(chat(client, "Two.", prompt_cache_retention="24h")) > 0
    clock.advance(5 * 3600)
    assert cached(chat(client, "Three.", prompt_cache_retention="24h")) == 0


def test_openai_cache_is_per_model_key_and_prompt_cache_key(server: ScriptedServer) -> None:
    client = gpt(server)
    chat(client, "One.", prompt_cache_key="session-a")
    assert cached(chat(client, "Two.", prompt_cache_key="session-b")) == 0
    assert cached(chat(client, "Two.", prompt_cache_key="session-a", model="gpt-4.1-mini")) == 0
    assert cached(chat(gpt(server, key="sk-another-account"), "Two.", prompt_cache_key="session-a")) == 0
    assert cached(chat(client, "Two.", prompt_cache_key="session-a")) > 0


def test_parallel_requests_each_find_their_own_prefix(server: ScriptedServer) -> None:
    client = claude(server)
    prompts = [f"Project {i}: " + LONG for i in range(8)]

    def twice(text: str) -> tuple[int, int]:
        first = ask(client, [user("Go.")], system=system(text))
        return first.cache_creation_input_tokens, ask(
            client, [user("Again.")], system=system(text)
        ).cache_read_input_tokens

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(twice, prompts))
    assert all(written == read > 1024 for written, read in results), results


def test_memory_is_bounded_and_the_least_recently_used_prefix_goes_first(clock: Clock) -> None:
    cache = PromptCache(clock, capacity=2)

    def body(text: str) -> dict[str, Any]:
        return {"model": SONNET, "system": system(text), "messages": [user("Hi.")]}

    a, b, c = (body(f"{name}: " + LONG) for name in "abc")
    cache.anthropic(a)
    cache.anthropic(b)
    assert cache.anthropic(a).read > 0  # a is now the most recently used
    cache.anthropic(c)  # evicts b
    assert len(cache) == 2
    assert cache.anthropic(a).read > 0 and cache.anthropic(b).read == 0


def test_the_request_log_keeps_the_tokens_each_answer_reported(server: ScriptedServer) -> None:
    """What a benchmark adds up per kind of request: the same figures the client read in `usage`."""
    client = claude(server)
    first = ask(client, [user("What is 2 + 2?")])
    second = ask(client, [user("And 3 + 3?")])
    logged = [r.tokens for r in server.requests if r.path.endswith("/messages")]
    assert logged == [
        {
            "fresh": u.input_tokens,
            "cache_write": u.cache_creation_input_tokens,
            "cache_read": u.cache_read_input_tokens,
            "output": u.output_tokens,
        }
        for u in (first, second)
    ]
    reply = gpt(server).chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": LONG}])
    assert reply.usage is not None
    (chat,) = [r.tokens for r in server.requests if r.api == "chat"]
    assert chat["fresh"] + chat["cache_read"] == reply.usage.prompt_tokens and chat["cache_write"] == 0
