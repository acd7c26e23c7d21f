"""The scripted model server, exercised through the official ``anthropic`` and ``openai`` SDKs.

If the SDKs accept its answers (streaming and not, tool calls, errors, retries), the agent CLIs built on
the same protocols will too; the CLI-level checks are in test_agent_clis.py.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from skillopt_lib.testing import (
    Branch,
    Fault,
    Match,
    Rule,
    Script,
    ScriptError,
    Step,
    apply_patch,
    bash,
    call,
    load_script,
    write_file,
)
from skillopt_lib.testing.script import Conversation, Message, ToolSpec, resolve_tool_calls
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.agent_clis import DEFAULT_API_KEY as SCRIPTED_API_KEY

WEATHER_TOOL_ANTHROPIC = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
WEATHER_TOOL_CHAT = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": WEATHER_TOOL_ANTHROPIC["input_schema"]},
}
WEATHER_TOOL_RESPONSES = {
    "type": "function",
    "name": "get_weather",
    "parameters": WEATHER_TOOL_ANTHROPIC["input_schema"],
}

WEATHER = Script(
    [
        Rule(
            "weather",
            Match(user=r"(?i)weather"),
            steps=[
                Step(text="Let me look that up.", tool_calls=[call("get_weather", {"city": "Paris"})]),
                Step(
                    text="",
                    branches=[Branch(r"sunny", [Step(text="Bring sunglasses.")])],
                ),
            ],
            done_text="Nothing more to add.",
        ),
        Rule("long", Match(user="long answer"), steps=[Step(text="word " * 60)]),
    ]
)


def anthropic_client(server: ScriptedServer, **kwargs: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key=SCRIPTED_API_KEY, **kwargs)


def openai_client(server: ScriptedServer, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url_openai, api_key=SCRIPTED_API_KEY, **kwargs)


def post_json(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


# ------------------------------------------------------------------------------------- Anthropic


@pytest.mark.model_script(WEATHER)
def test_anthropic_plain_text_with_deterministic_usage(model_server: ScriptedServer) -> None:
    client = anthropic_client(model_server)
    first = client.messages.create(
        model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": "hello"}]
    )
    again = client.messages.create(
        model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": "hello"}]
    )
    assert [b.type for b in first.content] == ["text"]
    assert first.content[0].text == "OK"  # the default rule
    assert first.stop_reason == "end_turn"
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    assert (first.id, first.usage.input_tokens) == (again.id, again.usage.input_tokens)


@pytest.mark.model_script(WEATHER)
def test_anthropic_streaming_tool_call_then_branch_on_tool_output(model_server: ScriptedServer) -> None:
    client = anthropic_client(model_server)
    messages: list[Any] = [{"role": "user", "content": "What's the weather in Paris?"}]
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=256, messages=messages, tools=[WEATHER_TOOL_ANTHROPIC]
    ) as stream:
        event_types = {event.type for event in stream}
        first = stream.get_final_message()
    assert {"message_start", "content_block_start", "content_block_delta", "message_stop"} <= event_types
    assert first.stop_reason == "tool_use"
    text, tool_use = first.content
    assert text.type == "text" and text.text == "Let me look that up."
    assert tool_use.type == "tool_use" and tool_use.name == "get_weather"
    assert tool_use.input == {"city": "Paris"}

    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "sunny, 24C"}],
        },
    ]
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=256, messages=messages, tools=[WEATHER_TOOL_ANTHROPIC]
    ) as stream:
        second = stream.get_final_message()
    assert second.content[0].text == "Bring sunglasses."
    assert second.stop_reason == "end_turn"
    # The tool output reached the model, and the log says which step answered.
    assert model_server.requests_matching(api="anthropic", text="sunny, 24C")[0].step == "weather/1/b0/0"


@pytest.mark.model_script(WEATHER)
def test_anthropic_long_text_arrives_in_many_deltas(model_server: ScriptedServer) -> None:
    client = anthropic_client(model_server)
    deltas = []
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=256, messages=[{"role": "user", "content": "a long answer"}]
    ) as stream:
        for text in stream.text_stream:
            deltas.append(text)
    assert len(deltas) > 5
    assert "".join(deltas) == "word " * 60


def test_anthropic_count_tokens_and_models(model_server: ScriptedServer) -> None:
    client = anthropic_client(model_server)
    counted = client.messages.count_tokens(
        model="claude-sonnet-4-6", messages=[{"role": "user", "content": "x" * 400}]
    )
    assert counted.input_tokens >= 100
    assert [m.id for m in client.models.list()] == list(model_server.models)


def test_injected_text_is_ignored_when_matching(model_server: ScriptedServer) -> None:
    """Claude Code's reminders and system messages and Codex's context messages never match a rule."""
    model_server.set_script(
        Script([Rule("real", Match(user=r"^fix the bug$"), steps=[Step(text="matched the real prompt")])])
    )
    status, claude_like = post_json(
        f"{model_server.url}/v1/messages?beta=true",
        {
            "model": "claude-sonnet-4-6",
            "max_tokens": 10,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "<system-reminder>\nToday is Monday.\n</system-reminder>"},
                        {"type": "text", "text": "fix the bug"},
                    ],
                },
                {"role": "system", "content": "Skills available: none"},
            ],
        },
        {"x-api-key": SCRIPTED_API_KEY, "anthropic-version": "2023-06-01"},
    )
    assert status == 200 and claude_like["content"][0]["text"] == "matched the real prompt"
    status, codex_like = post_json(
        f"{model_server.base_url_openai}/responses",
        {
            "model": "gpt-5.5",
            "input": [
                {
                    "type": "message",
                    "role": "developer",
                    "content": [{"type": "input_text", "text": "rules"}],
                },
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "fix the bug"}],
                },
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "<environment_context><cwd>/w</cwd>"}],
                },
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "# AGENTS.md instructions for /w\n..."}],
                },
            ],
        },
        {"authorization": f"Bearer {SCRIPTED_API_KEY}"},
    )
    assert status == 200 and codex_like["output"][0]["content"][0]["text"] == "matched the real prompt"
    assert [r.last_user_text for r in model_server.requests] == ["fix the bug", "fix the bug"]


# ------------------------------------------------------------------------------------- OpenAI Chat


@pytest.mark.model_script(WEATHER)
def test_chat_completions_plain_and_streaming_with_usage(model_server: ScriptedServer) -> None:
    client = openai_client(model_server)
    plain = client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
    assert plain.choices[0].message.content == "OK"
    assert plain.choices[0].finish_reason == "stop"
    assert plain.usage is not None and plain.usage.total_tokens > 0

    chunks = list(
        client.chat.completions.create(
            model="gpt-4.1",
            messages=[{"role": "user", "content": "a long answer please"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "word " * 60
    assert chunks[-1].choices == [] and chunks[-1].usage is not None  # usage comes last, after the finish


@pytest.mark.model_script(WEATHER)
def test_chat_completions_tool_calls_plain_and_streamed(model_server: ScriptedServer) -> None:
    client = openai_client(model_server)
    messages: list[Any] = [{"role": "user", "content": "weather in Paris?"}]
    plain = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=[WEATHER_TOOL_CHAT])
    choice = plain.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    tool_call = choice.message.tool_calls[0]
    assert tool_call.type == "function"
    assert (tool_call.function.name, json.loads(tool_call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )

    with client.chat.completions.stream(
        model="gpt-4.1", messages=messages, tools=[WEATHER_TOOL_CHAT]
    ) as stream:
        for _ in stream:
            pass
        streamed = stream.get_final_completion()
    streamed_calls = streamed.choices[0].message.tool_calls
    assert streamed_calls is not None
    assert streamed_calls[0].function.arguments == tool_call.function.arguments

    messages += [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": tool_call.id, "content": "sunny"},
    ]
    follow_up = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=[WEATHER_TOOL_CHAT])
    assert follow_up.choices[0].message.content == "Bring sunglasses."


# ------------------------------------------------------------------------------------- Responses


CODEX_LIKE = Script(
    [
        Rule(
            "edit",
            Match(user="make a file", api="responses"),
            steps=[
                Step(
                    text="Creating it.",
                    tool_calls=[
                        apply_patch("*** Begin Patch\n*** Add File: a.txt\n+alpha\n*** End Patch\n"),
                        bash("cat a.txt"),
                    ],
                ),
                Step(text="Done: a.txt holds alpha."),
            ],
        )
    ]
)
CODEX_TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "exec_command",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    },
    {"type": "custom", "name": "apply_patch", "format": {"type": "text"}},
]


@pytest.mark.model_script(CODEX_LIKE)
def test_responses_plain_streaming_function_and_custom_tool_calls(model_server: ScriptedServer) -> None:
    client = openai_client(model_server)
    plain = client.responses.create(model="gpt-5.5", input="hi")
    assert plain.output_text == "OK"
    assert plain.usage is not None and plain.usage.total_tokens > 0

    seen: list[str] = []
    with client.responses.stream(model="gpt-5.5", input="please make a file", tools=CODEX_TOOLS) as stream:
        for event in stream:
            seen.append(event.type)
        final = stream.get_final_response()
    assert seen[:2] == ["response.created", "response.in_progress"]
    for expected in (
        "response.output_item.added",
        "response.output_text.delta",
        "response.custom_tool_call_input.delta",
        "response.function_call_arguments.delta",
        "response.output_item.done",
    ):
        assert expected in seen
    assert seen[-1] == "response.completed"
    kinds = [item.type for item in final.output]
    assert kinds == ["message", "custom_tool_call", "function_call"]
    patch_call, shell_call = final.output[1], final.output[2]
    assert patch_call.type == "custom_tool_call" and patch_call.name == "apply_patch"
    assert "*** Add File: a.txt" in patch_call.input
    assert shell_call.type == "function_call" and shell_call.name == "exec_command"
    assert json.loads(shell_call.arguments) == {"cmd": "cat a.txt"}
    assert final.usage is not None and final.usage.output_tokens > 0

    follow_up = client.responses.create(
        model="gpt-5.5",
        tools=CODEX_TOOLS,
        input=[
            {"type": "message", "role": "user", "content": "please make a file"},
            *[item.model_dump(exclude_none=True) for item in final.output],
            {"type": "custom_tool_call_output", "call_id": patch_call.call_id, "output": "Success."},
            {"type": "function_call_output", "call_id": shell_call.call_id, "output": "alpha"},
        ],
    )
    assert follow_up.output_text == "Done: a.txt holds alpha."


def test_neutral_calls_adapt_to_the_offered_tools() -> None:
    """One script serves Claude Code, Codex and plain chat clients: calls follow the tools offered."""

    def conv(*tools: ToolSpec) -> Conversation:
        return Conversation("chat", "m", "", list(tools), [Message("user", "x")], "", cwd="/repo/p")

    claude = conv(
        ToolSpec("Bash", properties={"command": {"type": "string"}}),
        ToolSpec("Write", properties={"file_path": {}, "content": {}}),
    )
    codex = conv(ToolSpec("exec_command", properties={"cmd": {}}), ToolSpec("apply_patch", "custom"))
    old_codex = conv(ToolSpec("shell", properties={"command": {"type": "array"}}))
    calls = [bash("ls"), write_file("a/b.txt", "hi")]
    c = resolve_tool_calls(calls, claude)
    assert [(x.name, dict(x.arguments or {})) for x in c] == [
        ("Bash", {"command": "ls"}),
        ("Write", {"file_path": "/repo/p/a/b.txt", "content": "hi"}),
    ]
    x = resolve_tool_calls(calls, codex)
    assert x[0].arguments == {"cmd": "ls"}
    assert (
        x[1].kind == "custom" and x[1].input == "*** Begin Patch\n*** Add File: a/b.txt\n+hi\n*** End Patch\n"
    )
    o = resolve_tool_calls(calls, old_codex)
    assert o[0].arguments == {"command": ["bash", "-lc", "ls"]}
    assert "cat > a/b.txt <<'SKILLOPT_EOF'\nhi\nSKILLOPT_EOF" in o[1].arguments["command"][2]  # type: ignore[index]
    with pytest.raises(ScriptError, match="no shell tool"):
        resolve_tool_calls([bash("ls")], conv())


# ------------------------------------------------------------------------------------- errors


def test_missing_key_gets_401_in_each_providers_shape(model_server: ScriptedServer) -> None:
    with pytest.raises(anthropic.AuthenticationError) as a_err:
        anthropic.Anthropic(base_url=model_server.url, api_key="wrong", max_retries=0).messages.create(
            model="claude-sonnet-4-6", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
    assert a_err.value.status_code == 401
    assert a_err.value.body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }
    with pytest.raises(openai.AuthenticationError) as o_err:
        openai.OpenAI(base_url=model_server.base_url_openai, api_key="wrong", max_retries=0).responses.create(
            model="gpt-5.5", input="hi"
        )
    assert o_err.value.code == "invalid_api_key"
    assert [r.auth_ok for r in model_server.requests] == [False, False]
    assert all(v == "<redacted>" for r in model_server.requests for k, v in r.headers.items() if "key" in k)


def test_unknown_path_is_a_404_in_provider_shape(model_server: ScriptedServer) -> None:
    status, body = post_json(
        f"{model_server.url}/v1/embeddings", {"input": "x"}, {"authorization": f"Bearer {SCRIPTED_API_KEY}"}
    )
    assert status == 404 and body["error"]["code"] == "unknown_url"
    status, body = post_json(
        f"{model_server.url}/v1/messages/batches",
        {},
        {"x-api-key": SCRIPTED_API_KEY, "anthropic-version": "2023-06-01"},
    )
    assert status == 404 and body == {
        "type": "error",
        "error": {"type": "not_found_error", "message": body["error"]["message"]},
    }


FLAKY = Script(
    [
        Rule(
            "rate-limited",
            Match(user="anthropic"),
            steps=[Step(text="after 429", fault=Fault(status=429, retry_after=0.05, times=1))],
        ),
        Rule(
            "overloaded",
            Match(user="overloaded"),
            steps=[Step(text="after 529", fault=Fault(status=529, times=2))],
        ),
        Rule(
            "broken", Match(user="openai"), steps=[Step(text="after 500", fault=Fault(status=500, times=1))]
        ),
    ]
)


@pytest.mark.model_script(FLAKY)
def test_sdks_retry_injected_429_529_and_500(model_server: ScriptedServer) -> None:
    a = anthropic_client(model_server, max_retries=2)
    reply = a.messages.create(
        model="claude-sonnet-4-6", max_tokens=5, messages=[{"role": "user", "content": "anthropic"}]
    )
    assert reply.content[0].text == "after 429"  # type: ignore[union-attr]
    assert [r.status for r in model_server.requests_matching(rule="rate-limited")] == [429, 200]
    reply = a.messages.create(
        model="claude-sonnet-4-6", max_tokens=5, messages=[{"role": "user", "content": "overloaded"}]
    )
    assert [r.status for r in model_server.requests_matching(rule="overloaded")] == [529, 529, 200]
    o = openai_client(model_server, max_retries=1)
    assert o.responses.create(model="gpt-5.5", input="openai").output_text == "after 500"
    assert [r.status for r in model_server.requests_matching(rule="broken")] == [500, 200]


def test_429_without_retries_surfaces_retry_after(model_server: ScriptedServer) -> None:
    model_server.set_script(Script([Rule("limited", steps=[Step(fault=Fault(status=429, retry_after=7))])]))
    with pytest.raises(openai.RateLimitError) as err:
        openai_client(model_server, max_retries=0).chat.completions.create(
            model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
        )
    assert err.value.response.headers["retry-after"] == "7"
    assert err.value.body == {
        "message": "Rate limited by the scripted server.",
        "type": "rate_limit_exceeded",
        "param": None,
        "code": "rate_limit_exceeded",
    }


def test_malformed_reply_delay_and_hang(model_server: ScriptedServer) -> None:
    model_server.set_script(
        Script(
            [
                Rule("garbage", Match(user="garbage"), steps=[Step(fault=Fault(malformed=True))]),
                Rule("slow", Match(user="slow"), steps=[Step(text="finally", fault=Fault(delay=0.4))]),
                Rule("stuck", Match(user="stuck"), steps=[Step(fault=Fault(hang=True))]),
            ]
        )
    )
    client = openai_client(model_server, max_retries=0)
    with pytest.raises((openai.APIResponseValidationError, json.JSONDecodeError, ValueError)):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "garbage"}])
    started = time.monotonic()
    slow = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "slow"}])
    assert slow.choices[0].message.content == "finally" and time.monotonic() - started >= 0.4
    with pytest.raises(openai.APITimeoutError):
        client.with_options(timeout=0.5).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "stuck"}]
        )
    # A hanging request is logged while it hangs.
    assert model_server.requests_matching(rule="stuck")[0].error == "hung by script"


# ------------------------------------------------------------------------------------- determinism


@pytest.mark.model_script(WEATHER)
def test_concurrent_sessions_get_answers_from_their_own_requests(model_server: ScriptedServer) -> None:
    client = openai_client(model_server)

    def converse(i: int) -> tuple[str | None, str | None]:
        messages: list[Any] = [{"role": "user", "content": f"weather #{i}?"}]
        first = client.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL_CHAT])
        calls = first.choices[0].message.tool_calls or []
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": calls[0].id, "content": "sunny" if i % 2 else "rain"},
        ]
        second = client.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL_CHAT])
        return first.choices[0].message.content, second.choices[0].message.content

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(converse, range(16)))
    for i, (first, second) in enumerate(results):
        assert first == "Let me look that up."
        # No branch matches "rain": the rule falls through to its done_text.
        assert second == ("Bring sunglasses." if i % 2 else "Nothing more to add.")
    assert len(model_server.requests) == 32


# ------------------------------------------------------------------------------------- files, log, CLI


SCRIPT_YAML = """
default_text: fallback
rules:
  - name: greet
    match: {user: "(?i)hello", api: chat}
    steps:
      - text: "Hi there."
        tools:
          - bash: "echo hi"
          - write_file: {path: notes.txt, content: "x\\n"}
      - branches:
          - if_output: "^hi$"
            steps: ["It said hi."]
        text: "It did not say hi."
  - name: limited
    match: {user: limited}
    fault: {status: 429, retry_after: 1}
"""


def test_yaml_script_round_trips_and_serves(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT_YAML)
    script = load_script(path)
    assert Script.from_dict(json.loads(json.dumps(script.to_dict()))) == script
    greet = script.rules[0]
    assert greet.steps[0].tool_calls == [bash("echo hi"), write_file("notes.txt", "x\n")]
    assert greet.steps[1].branches[0].steps[0].text == "It said hi."
    assert greet.steps[1].text == "It did not say hi."
    assert script.rules[1].steps[0].fault == Fault(status=429, retry_after=1)
    with pytest.raises(ScriptError, match="unknown step keys"):
        Script.from_dict({"rules": [{"steps": [{"txt": "typo"}]}]})

    log = tmp_path / "requests.jsonl"
    with ScriptedServer(script, log_path=log) as server:
        client = openai.OpenAI(base_url=server.base_url_openai, api_key="any", max_retries=0)
        assert (
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "bye"}])
            .choices[0]
            .message.content
            == "fallback"
        )
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records[0]["rule"] is None and records[0]["body"]["messages"][0]["content"] == "bye"


def test_request_log_helpers(model_server: ScriptedServer) -> None:
    model_server.set_script(
        Script([Rule("skill", Match(request="RULE-X"), steps=[Step(text="used the skill")])])
    )
    client = anthropic_client(model_server)
    reply = client.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=5,
        system="Skill body: always apply RULE-X.",
        messages=[{"role": "user", "content": "go"}],
    )
    assert reply.content[0].text == "used the skill"  # type: ignore[union-attr]
    client.messages.create(
        model="claude-sonnet-4-6", max_tokens=5, messages=[{"role": "user", "content": "other"}]
    )
    assert "always apply RULE-X" in model_server.all_text()
    assert [r.last_user_text for r in model_server.requests_matching(rule="skill")] == ["go"]
    assert [r.last_user_text for r in model_server.requests_matching(user="^oth")] == ["other"]


def test_side_request_without_tools_gets_text_only(model_server: ScriptedServer) -> None:
    """Agents ask for session titles with the user's prompt but no tools: a tool step must not break that."""
    model_server.set_script(Script([Rule("work", steps=[Step(text="Working.", tool_calls=[bash("make")])])]))
    reply = anthropic_client(model_server).messages.create(
        model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "title for: do work"}]
    )
    assert [b.type for b in reply.content] == ["text"] and reply.stop_reason == "end_turn"
    assert model_server.requests[0].warnings == ["tool calls left out: the request offered no tools"]


def test_runs_as_a_module_and_prints_its_url(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"rules": [{"name": "r", "text": "from the file"}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillopt_lib.testing.scripted_server", "--script", str(path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="any", max_retries=0)
        assert client.responses.create(model="gpt-5.5", input="anything").output_text == "from the file"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_documented_example_script_walks_as_described() -> None:
    """The YAML example in docs/testing.md parses and its branches play as the text there says."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "testing.md").read_text()
    script = Script.from_text(doc.split("```yaml\n", 1)[1].split("```", 1)[0])
    tools = [ToolSpec("Bash", properties={"command": {}}), ToolSpec("apply_patch", "custom")]

    def play(*outputs: str) -> tuple[str, str]:
        messages = [Message("user", "Please fix the tests")]
        for output in outputs:
            messages += [Message("assistant", "..."), Message("tool", output)]
        selection = script.select(Conversation("anthropic", "m", "", tools, messages, ""))
        return selection.path, selection.step.text or selection.step.tool_calls[0].kind

    assert play() == ("fix-tests/0", "Running the tests.")
    assert play("3 passed") == ("fix-tests/1/b0/0", "All green.")
    assert play("1 failed") == ("fix-tests/1/b1/0", "apply_patch")
    assert play("1 failed", "Success.") == ("fix-tests/1/b1/1", "Fixed.")
    assert play("1 failed", "Success.", "") == ("fix-tests/2", "Anything else?")
    assert play("3 passed", "", "") == ("fix-tests/done", "Nothing more.")
