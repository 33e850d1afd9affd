"""A context-sensitive fake chat model: it acts only on what its input shows it.

Closed-loop evaluation needs a model whose success depends on the *view*, not on a script: a
scripted model replays its answers whatever it was sent, so every context policy would solve
the same tasks. :class:`ContextTestModel` reads a task written in a small step language (the
built-in suites of :mod:`mtagent.eval` write their tasks that way; a person can too)::

    TASK t07
    Work in the folder `t07`.                (optional: paths below are relative to it)
    Constraint: OUTPUT_TAG = blue-heron       (a fact stated once, anywhere in the text)
    1. Read `config/limits.py`.
    2. Read the files `src/mod_{00..39}.py`, one by one.
    3. Run `python3 tools/probe.py`.
    4. Write the value of RETRY_LIMIT into `answer.txt`.
    5. Write the values of POOL_SIZE and ERROR_CODE into `both.txt`.   (one value a line)

and decides every call from its input alone, with no memory between calls — as a capable model
would, no kinder to one context policy than another:

* the task is the **last** ``TASK`` block visible in any message (the user's, or a hand-off that
  quoted it); no visible task → it says so and stops;
* its place is found by matching the visible tool calls to the steps **in order** (a path the task
  reads twice is two steps, so a repeated read never sends it back), starting from the progress a
  visible hand-off of its own records (``Progress: 12 of 40 steps done (TASK t07).``);
* ``Write the value of NAME`` needs ``NAME = v``, ``NAME: v``, ``NAME=v`` or ``"NAME": "v"``
  visible somewhere (the newest wins). If it is not, the model looks it up, each way once per
  stretch: it **re-reads** a file the task named (a file still on disk comes back), **greps** the
  workspace for ``NAME``, **pages** a saved output (``read_tool_result``, from the path its
  ``<persisted-output>`` preview or read notice shows, continuing where the last visible page
  ended), and calls ``recall`` when that tool is offered. Only then does it write ``unknown``.

It is also a summarizer told the task (:mod:`mtagent.agent.context_sheets`): asked for a hand-off
sheet or session notes, it writes the progress, the values of the facts the task names, and the
saved outputs it could page — so a compaction made with it keeps what a real model, told the
task, would keep, and the call is priced as any model call is (``summarizes``).

The model is a :class:`~mtagent.agent.scripted.ScriptedChatModel` (usage counted exactly from what
it was sent). Its usage also reports the **cache read**: the tokens of the longest message prefix
it shares with the previous call, as a provider's prompt cache would — so a policy that keeps
rewriting the prefix pays for it. Its tool-call ids are counted (``call_000001``, …), not random:
they name the files large results are saved in, which a preview shows, so the same run sends the
same text every time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import PrivateAttr

from mtagent.agent.context_sheets import summary_reply
from mtagent.agent.context_steps import (DONE_REPLY, LOST_REPLY, MODEL_NAME, UNKNOWN, Step, Task, decide, fact_value,
                                         find_task, parse_task)
from mtagent.agent.scripted import ScriptedChatModel, reply
from mtagent.context.tokens import count_text_tokens, message_text

__all__ = ["DONE_REPLY", "LOST_REPLY", "MODEL_NAME", "UNKNOWN", "ContextTestModel", "Step", "Task", "answer", "decide",
           "fact_value", "find_task", "parse_task"]


def answer(messages: Sequence[BaseMessage], tool_names: Sequence[str]) -> AIMessage:
    """A side request (hand-off, session notes) gets its sheet; any other request, the next step."""
    sheet = summary_reply(messages)
    return reply(sheet) if sheet is not None else decide(messages, tool_names)


class ContextTestModel(ScriptedChatModel):
    """See the module docstring; ``--model context-test:`` in the CLI."""

    model_name: str = MODEL_NAME
    summarizes: bool = True  # it writes hand-offs and notes itself (agent/summary_model.py)
    _previous: list[tuple[str, str]] = PrivateAttr(default_factory=list)
    _previous_tools: str = PrivateAttr(default="")
    _call_ids: int = PrivateAttr(default=0)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__((), **kwargs)
        self.policy = lambda messages: answer(messages, self.bound_tool_names)

    @property
    def _llm_type(self) -> str:
        return "mtagent-context-test"

    def _with_usage(self, message: AIMessage, messages: list[BaseMessage], tools: list[Any] | None) -> AIMessage:
        message = super()._with_usage(self._counted_ids(message), messages, tools)
        keys = [(m.type, message_text(m)) for m in messages]
        schemas = json.dumps(tools or [], sort_keys=True)
        matched = 0
        while matched < min(len(keys), len(self._previous)) and keys[matched] == self._previous[matched]:
            matched += 1
        shared = sum(count_text_tokens(message_text(m), self.encoding) + 4 for m in messages[:matched])
        if matched and tools and schemas == self._previous_tools:  # the schemas sit before the messages
            shared += count_text_tokens(schemas, self.encoding)
        self._previous, self._previous_tools = keys, schemas
        usage = dict(message.usage_metadata or {})
        usage["input_token_details"] = {"cache_read": min(shared, int(usage.get("input_tokens", 0)))}
        return message.model_copy(update={"usage_metadata": usage})

    def _counted_ids(self, message: AIMessage) -> AIMessage:
        if not message.tool_calls:
            return message
        calls = []
        for call in message.tool_calls:
            self._call_ids += 1
            calls.append({**call, "id": f"call_{self._call_ids:06d}"})
        return message.model_copy(update={"tool_calls": calls})
