"""A scripted chat model: a real LangChain ``BaseChatModel`` whose replies are written in advance.

It ships in the package (not only in tests) because ``mtagent demo`` drives the real agent loop
with it, and because it lets anyone reproduce an agent run with no network and no key.

Each call consumes the next *step*:

* an ``AIMessage`` (use :func:`tool_call` / :func:`reply` to build one) is returned as is;
* a ``str`` becomes a plain text reply;
* an exception instance is raised (to rehearse provider failures);
* a callable ``step(messages) -> AIMessage | str`` decides from what the model was sent.

After the steps run out, ``policy`` (a callable like the above) answers every further call;
without one, the model raises :class:`ScriptExhausted`. Every reply carries ``usage_metadata``
counted exactly from what was sent, so the engine's usage anchoring sees realistic numbers.
``bind_tools`` works (the tool names are recorded), and ``stream`` yields text in small chunks
followed by tool-call chunks and the usage.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, PrivateAttr

from mtagent.context.tokens import count_text_tokens, message_text

Reply = AIMessage | str
Policy = Callable[[list[BaseMessage]], Reply]


class ScriptExhausted(RuntimeError):
    """The script has no step left and no policy to fall back on."""


def tool_call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None,
              content: str = "") -> AIMessage:
    """An assistant message asking for one tool call."""
    call_id = id or f"call_{uuid.uuid4().hex[:12]}"
    return AIMessage(content=content, tool_calls=[{"name": name, "args": dict(args or {}), "id": call_id,
                                                   "type": "tool_call"}])


def tool_calls(*calls: tuple[str, dict[str, Any]], content: str = "") -> AIMessage:
    """An assistant message asking for several tool calls at once."""
    built = [tool_call(name, args).tool_calls[0] for name, args in calls]
    return AIMessage(content=content, tool_calls=built)


def reply(text: str) -> AIMessage:
    return AIMessage(content=text)


class ScriptedChatModel(BaseChatModel):
    """See the module docstring. ``calls`` holds the messages of every call, in order."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    steps: list[Any] = []
    policy: Any = None
    encoding: str = "o200k_base"
    stream_chunk_chars: int = 24
    model_name: str = "scripted"

    _cursor: int = PrivateAttr(default=0)
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _call_tools: list[list[Any]] = PrivateAttr(default_factory=list)
    _tool_names: list[str] = PrivateAttr(default_factory=list)

    def __init__(self, steps: Sequence[Any] = (), **kwargs: Any) -> None:
        super().__init__(steps=list(steps), **kwargs)

    @property
    def _llm_type(self) -> str:
        return "mtagent-scripted"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    @property
    def call_tools(self) -> list[list[Any]]:
        """The tool schemas each call carried (as sent: OpenAI function dicts)."""
        return self._call_tools

    @property
    def bound_tool_names(self) -> list[str]:
        return list(self._tool_names)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None,
                   **kwargs: Any) -> Runnable[Any, AIMessage]:
        formatted = [convert_to_openai_tool(t) for t in tools]
        self._tool_names = [t["function"]["name"] for t in formatted]
        return self.bind(tools=formatted, **kwargs)

    def _next_reply(self, messages: list[BaseMessage], tools: list[Any] | None = None) -> AIMessage:
        self._calls.append(list(messages))
        self._call_tools.append(list(tools or []))
        if self._cursor < len(self.steps):
            step = self.steps[self._cursor]
            self._cursor += 1
        elif self.policy is not None:
            step = self.policy
        else:
            raise ScriptExhausted(
                f"ScriptedChatModel has no step left after {len(self._calls) - 1} call(s); "
                "add steps or a policy"
            )
        if isinstance(step, BaseException):
            raise step
        if callable(step) and not isinstance(step, BaseMessage):
            step = step(list(messages))
        message = AIMessage(content=step) if isinstance(step, str) else step
        if not isinstance(message, AIMessage):
            raise TypeError(f"a script step must give an AIMessage or str, got {type(message).__name__}")
        return self._with_usage(message, messages, tools)

    def _with_usage(self, message: AIMessage, messages: list[BaseMessage], tools: list[Any] | None) -> AIMessage:
        """Usage as a provider reports it: every message sent plus the tool schemas."""
        if message.usage_metadata:
            return message
        sent = sum(count_text_tokens(message_text(m), self.encoding) + 4 for m in messages)
        if tools:
            sent += count_text_tokens(json.dumps(tools, sort_keys=True), self.encoding)
        out = count_text_tokens(message_text(message), self.encoding)
        return message.model_copy(update={
            "usage_metadata": {"input_tokens": sent, "output_tokens": out, "total_tokens": sent + out},
            "response_metadata": {**(message.response_metadata or {}), "model_name": self.model_name},
        })

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next_reply(messages, kwargs.get("tools")))])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        message = self._next_reply(messages, kwargs.get("tools"))
        text = message.content if isinstance(message.content, str) else message_text(message)
        size = max(1, self.stream_chunk_chars)
        for start in range(0, len(text), size):
            piece = text[start:start + size]
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece, id=message.id))
            if run_manager is not None:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        calls = [
            tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
            for i, c in enumerate(message.tool_calls)
        ]
        calls += [
            tool_call_chunk(name=c.get("name"), args=c.get("args"), id=c.get("id"), index=len(calls) + i)
            for i, c in enumerate(message.invalid_tool_calls)
        ]
        yield ChatGenerationChunk(message=AIMessageChunk(
            content="", id=message.id, tool_call_chunks=calls,
            usage_metadata=message.usage_metadata,
            response_metadata=message.response_metadata,
            chunk_position="last",
        ))
