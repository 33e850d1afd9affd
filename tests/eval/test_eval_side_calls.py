"""Summary calls are counted apart from the conversation's calls (#29).

A model the engine asks for hand-off summaries (not a scripted one, whose sessions stay
extractive): it acts like the context-test model, and answers a summary request with a sheet
that quotes the task. Every call it makes outside the conversation must land in ``side``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from mtagent.context.tokens import message_text
from mtagent.eval.policies import load_policy
from mtagent.eval.suite import builtin_tasks
from mtagent.eval.worker import EvalUnit, run_unit
from mtagent.agent.context_model import decide, find_task

HANDOFF = "You are compacting the conversation"


class SheetWriter(BaseChatModel):
    """Decides like the context-test model; writes a hand-off sheet when asked for one."""

    tool_names: list[str] = []
    summaries: int = 0

    @property
    def _llm_type(self) -> str:
        return "sheet-writer"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        formatted = [convert_to_openai_tool(t) for t in tools]
        self.tool_names = [t["function"]["name"] for t in formatted]
        return self.bind(tools=formatted, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        sent = sum(len(message_text(m)) // 4 + 4 for m in messages)
        if any(HANDOFF in message_text(m) for m in messages):
            self.summaries += 1
            task = find_task(messages)
            text = message_text(messages[task.message_index]) if task else "(not stated)"
            reply = AIMessage(content=f"## User goal\n{text}\n## Current state\nworking")
        else:
            reply = decide(messages, self.tool_names)
        out = len(message_text(reply)) // 4 + 1
        reply.usage_metadata = {"input_tokens": sent, "output_tokens": out, "total_tokens": sent + out}
        reply.response_metadata = {"model_name": "sheet-writer"}
        return ChatResult(generations=[ChatGeneration(message=reply)])


def test_summary_calls_are_metered_apart_from_main_calls(tmp_path: Path) -> None:
    task = builtin_tasks(tmp_path / "suite")[1]  # 40 reads: compactions on a 12K window
    models: list[SheetWriter] = []

    def resolve(_spec: object) -> SheetWriter:
        models.append(SheetWriter())
        return models[0]

    record = run_unit(EvalUnit(load_policy("threshold"), (task,), str(tmp_path / "s")), resolve)[0]
    assert record["status"] == "done" and record["compactions"] >= 1
    assert models[0].summaries >= 1
    assert record["side"]["calls"] == models[0].summaries  # each summary request, and nothing else
    assert record["main"]["calls"] == record["calls"] and record["side"]["output"] > 0
