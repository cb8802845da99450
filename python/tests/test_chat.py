"""Chat on the tiny Gemma 3 (no template of its own: the built-in gemma format), against
`kestrel chat --template gemma`."""

from __future__ import annotations

import subprocess

import pytest

import kestrel

TURNS = ["hi", "how are you", "tell me more"]


def _kestrel_chat(cli, kes, turns, n, *flags):
    r = subprocess.run(
        [cli, "chat", str(kes), "--template", "gemma", "-n", str(n), "-t", "1", *flags],
        input="".join(t + "\n" for t in turns).encode(),
        capture_output=True,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.decode("utf-8", errors="replace")


def test_turns_equal_kestrel_chat(tiny, tiny_kes, cli):
    expected = _kestrel_chat(cli, tiny_kes, TURNS, 16, "--temp", "0")
    with tiny.start_chat(template="gemma") as chat:
        replies = [chat.send(TURNS[0], temperature=0, max_tokens=16)]
        replies.append("".join(chat.send(TURNS[1], temperature=0, max_tokens=16, stream=True)))
        replies.append(chat.send(TURNS[2], temperature=0, max_tokens=16))
        assert [m["role"] for m in chat.history] == ["user", "assistant"] * 3
        assert [m["content"] for m in chat.history[1::2]] == replies
    assert "".join(r + "\n" for r in replies) == expected
    with pytest.raises(kestrel.InvalidArgumentError, match="closed"):
        chat.send("again")


def test_sampled_turns_equal_kestrel_chat(tiny, tiny_kes, cli):
    flags = ["--temp", "1.2", "--seed", "5", "--system", "be brief"]
    expected = _kestrel_chat(cli, tiny_kes, TURNS[:2], 12, *flags)
    chat = tiny.start_chat("be brief", template="gemma")
    replies = [chat.send(t, temperature=1.2, seed=5, max_tokens=12) for t in TURNS[:2]]
    assert "".join(r + "\n" for r in replies) == expected


def test_thinking_off_equals_kestrel_chat_no_think(tiny, tiny_kes, cli):
    # The built-in gemma format has no reasoning block: --no-think and thinking=False both keep
    # the text as it is, and reach the same reply (Qwen3's template: tests/c_api_chat_test.cc).
    expected = _kestrel_chat(cli, tiny_kes, TURNS[:2], 12, "--temp", "0", "--no-think")
    with tiny.start_chat(template="gemma", thinking=False) as chat:
        replies = [chat.send(t, temperature=0, max_tokens=12) for t in TURNS[:2]]
    assert "".join(r + "\n" for r in replies) == expected


def test_chat_of_messages_gives_the_first_turns_reply(tiny, tiny_kes, cli):
    first = _kestrel_chat(cli, tiny_kes, TURNS[:1], 16, "--temp", "0")
    messages = [{"role": "user", "content": TURNS[0]}]
    reply = tiny.chat(messages, temperature=0, max_tokens=16, template="gemma")
    assert reply + "\n" == first
    assert "".join(
        tiny.chat(messages, temperature=0, max_tokens=16, template="gemma", stream=True)
    ) == reply
    assert tiny.chat_template(messages, template="gemma") == (
        "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"
    )


def test_a_stream_left_early_stops_the_turn(tiny):
    chat = tiny.start_chat(template="gemma")
    stream = chat.send("hi", temperature=0, max_tokens=200, stream=True)
    first = next(stream)
    stream.close()
    # The reply so far stays in the conversation: the piece seen, and any token generated
    # while it was handed over.
    assert chat.history[-1]["role"] == "assistant"
    assert chat.history[-1]["content"].startswith(first)
    assert chat.send("again", temperature=0, max_tokens=4) is not None


def test_chat_errors(tiny):
    with pytest.raises(kestrel.InvalidArgumentError, match="role"):
        tiny.chat([{"role": "robot", "content": "x"}], template="gemma")
    with pytest.raises(kestrel.InvalidArgumentError, match=r"messages\[0\]"):
        tiny.chat([{"text": "x"}], template="gemma")
    with pytest.raises(kestrel.InvalidArgumentError):
        tiny.start_chat(template="klingon")
