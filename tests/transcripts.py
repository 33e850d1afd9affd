"""A session on disk as a finished one left it: the user asks, the model calls one tool, the tool answers."""

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mtagent import paths
from mtagent.session import schema
from mtagent.session.transcript import TranscriptWriter


def write_exchange(root: Path, ask: str, tool: str, args: dict, output: str, *later: dict, sid: str = "s1") -> None:
    """Session ``sid`` of the project ``root``: messages u1, a1 (calling c1) and t1, then the ``later`` records."""
    with TranscriptWriter(paths.session_transcript_path(root, sid), session_id=sid) as writer:
        for m in (HumanMessage(ask, id="u1"),
                  AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": tool, "args": args}]),
                  ToolMessage(output, tool_call_id="c1", id="t1", name=tool)):
            writer.append(schema.message_to_record(m))
        for record in later:
            writer.append(record)
