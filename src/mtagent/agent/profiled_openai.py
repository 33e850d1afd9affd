"""``ChatOpenAI`` that speaks to one server profile (:mod:`mtagent.agent.server_profiles`).

Every request gets the output bound (``agent.max_output_tokens``, in the field the server
reads), the profile's ``tool_choice`` when tools are bound, ``content: ""`` for tool-call turns
where null is refused, and the model's own ``agent.model_options``, which win over all of it.
Where streaming with tools is broken the call is made unstreamed and handed back as one chunk;
where the server HTML-escapes text, tool arguments are unescaped.
"""

from __future__ import annotations

import html
import inspect
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI
from openai.resources.chat.completions import Completions
from pydantic import Field

from mtagent.agent.server_profiles import PROFILES, ServerProfile

_OUTPUT_FIELDS = ("max_tokens", "max_completion_tokens")
_SDK_FIELDS = frozenset(inspect.signature(Completions.create).parameters) - {"self"}


def _unescape(value: Any) -> Any:
    if isinstance(value, str):
        return html.unescape(value)
    if isinstance(value, dict):
        return {k: _unescape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unescape(v) for v in value]
    return value


def _as_chunk(message: AIMessage) -> ChatGenerationChunk:
    calls = [tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
             for i, c in enumerate(message.tool_calls)]
    chunk = AIMessageChunk(content=message.content, id=message.id, tool_call_chunks=calls,
                           usage_metadata=message.usage_metadata, response_metadata=message.response_metadata)
    return ChatGenerationChunk(message=chunk)


class ProfiledChatOpenAI(ChatOpenAI):
    """ChatOpenAI with a server profile, an output bound and per-model request options."""

    server_profile: ServerProfile = Field(default_factory=lambda: PROFILES["openai"])
    output_tokens: int | None = None
    request_options: dict[str, Any] = Field(default_factory=dict)

    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        profile = self.server_profile
        if self.output_tokens and not any(f in payload for f in _OUTPUT_FIELDS):
            payload[profile.max_tokens_field] = self.output_tokens
        if payload.get("tools") and profile.tool_choice and "tool_choice" not in payload:
            payload["tool_choice"] = profile.tool_choice
        if profile.empty_content_for_tool_calls:
            for message in payload.get("messages", []):
                if message.get("role") == "assistant" and message.get("content") is None:
                    message["content"] = ""
        options = dict(self.request_options)
        if any(f in options for f in _OUTPUT_FIELDS):
            for field in _OUTPUT_FIELDS:
                payload.pop(field, None)
        # Server-only fields (llama.cpp's ignore_eos, vLLM's top_k) are not arguments of the OpenAI
        # client's create(): passed as such they raise TypeError, so they travel in extra_body.
        extra = {k: v for k, v in options.items() if k not in _SDK_FIELDS}
        payload.update({k: v for k, v in options.items() if k in _SDK_FIELDS})
        if extra:
            payload["extra_body"] = {**(payload.get("extra_body") or {}), **extra}
        return payload

    def _create_chat_result(self, response: Any, generation_info: dict | None = None) -> ChatResult:
        result = super()._create_chat_result(response, generation_info)
        if self.server_profile.unescape_tool_args:
            for generation in result.generations:
                message = generation.message
                if isinstance(message, AIMessage) and message.tool_calls:
                    for call in message.tool_calls:
                        call["args"] = _unescape(call["args"])
        return result

    def _unstreamed(self, kwargs: dict[str, Any]) -> bool:
        return bool(kwargs.get("tools")) and not self.server_profile.stream_with_tools

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        if self._unstreamed(kwargs):
            kwargs.pop("stream_usage", None)
            message = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
            assert isinstance(message, AIMessage)
            chunk = _as_chunk(message)
            if run_manager is not None and chunk.text:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
            return
        yield from super()._stream(messages, stop, run_manager, **kwargs)

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        if self._unstreamed(kwargs):
            kwargs.pop("stream_usage", None)
            result = await self._agenerate(messages, stop, run_manager, **kwargs)
            message = result.generations[0].message
            assert isinstance(message, AIMessage)
            yield _as_chunk(message)
            return
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk
