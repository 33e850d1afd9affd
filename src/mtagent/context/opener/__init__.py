"""The one place a session is born (DESIGN principle 11).

Every front end — the CLI's :class:`~mtagent.agent.session.AgentSession`, the LangChain
middleware's per-thread sessions, a subagent child, replay — opens its session with
:func:`open_engine_session`, so all of them run the same rules and a measurement of one is a
measurement of all. It

* opens the session's storage through the :class:`~mtagent.session.store.Store` (files by
  default, PostgreSQL alike; :func:`mtagent.session.session_io.open_session_io`) and writes the
  ``session_start`` record of a new session (with its parent link for a child);
* builds the one sink chain: redaction → recall indexing → audit (every backend) → the writer;
* restores resume state: recorded message ids, the at-most-once tool guard, the session-memory
  coverage;
* picks the summarizer once (:func:`make_summarizer`) and the session-memory model, which always
  waits for the main call (:mod:`mtagent.context.model_gate`);
* owns the system-prompt context (:class:`SystemContext`: Tier 1/2 files, rules, memory, and the
  **tool catalog**), which :meth:`EngineSession.call_model` asks for on every call.

**The tool catalog.** :class:`SessionTools` is where tools enter a session: ``tools`` (built-in,
MCP, skills — anything the model may call), ``offered`` (the names bound with full schemas; the
rest deferred), ``list_tools``, ``schema_tokens`` (counted in the view's fixed part) and
``context`` (extra context buckets such as MCP server instructions or a skills listing, sent after
the static context). Pass one as ``tools=`` or set ``opened.system.tools`` once the tools exist
(they often need the opened session's artifacts and sink). The toolset's own catalog
(:mod:`mtagent.context.toolset`) fills it.

LangGraph-only parts (the checkpointer, the graph) stay in ``agent/``.
"""

from mtagent.context.opener.open import OpenedSession, ParentLink, open_engine_session
from mtagent.context.opener.system import FixedSystem, SystemContext, SystemPrompt, SessionTools
from mtagent.context.opener.wiring import CacheAlignedModel, build_engine_session, make_summarizer

__all__ = ["CacheAlignedModel", "FixedSystem", "OpenedSession", "ParentLink", "SystemContext", "SystemPrompt",
           "SessionTools", "build_engine_session", "make_summarizer", "open_engine_session"]
