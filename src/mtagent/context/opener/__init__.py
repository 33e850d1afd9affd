"""The one place a session is born (DESIGN principle 11).

Every front end — the CLI's :class:`~mtagent.agent.session.AgentSession`, the LangChain
middleware's per-thread sessions, a subagent child, replay — opens its session with
:func:`open_engine_session`, so all of them run the same rules and a measurement of one is a
measurement of all. It

* opens the session's storage through the :class:`~mtagent.session.store.Store` (files by
  default, PostgreSQL alike; :func:`mtagent.session.session_io.open_session_io`) and writes the
  ``session_start`` record of a new session (with its parent link for a child);
* builds the one sink chain: redaction → the writer → audit of decisions (every backend); the recall
  index catches up from the transcript when queried and at close (``SessionIndex``), never per record;
* restores resume state: recorded message ids, the at-most-once tool guard, the session-memory
  coverage;
* picks the summarizer once (:func:`make_summarizer`) and the session-memory model, which always
  waits for the main call (:mod:`mtagent.context.model_gate`);
* owns the system-prompt context (:class:`SystemContext`: Tier 1/2 files, rules, memory, and the
  tool catalog, :class:`SessionTools`, where tools enter a session), which
  :meth:`EngineSession.call_model` asks for on every call.

LangGraph-only parts (the checkpointer, the graph) stay in ``agent/``.
"""

from mtagent.context.opener.open import OpenedSession, ParentLink, open_engine_session
from mtagent.context.opener.system import FixedSystem, SystemContext, SystemPrompt, SessionTools
from mtagent.context.opener.wiring import CacheAlignedModel, build_engine_session, make_summarizer

__all__ = ["CacheAlignedModel", "FixedSystem", "OpenedSession", "ParentLink", "SystemContext", "SystemPrompt",
           "SessionTools", "build_engine_session", "make_summarizer", "open_engine_session"]
