"""The agent: a LangGraph loop around the context engine.

* :mod:`mtagent.agent.session` — :class:`~mtagent.agent.session.AgentSession`, what front ends drive
* :mod:`mtagent.agent.graph` — the reason → approve → tools graph and its nodes
* :mod:`mtagent.agent.opener` — the agent's half of the opener: tools, MCP servers, skills, the catalog
* :mod:`mtagent.agent.models` / :mod:`~mtagent.context.model_errors` — chat models, windows, retries
* :mod:`mtagent.agent.approval` — ask / allow / deny rules; :mod:`~mtagent.agent.prompts` — what the
  agent writes instead of a tool result
* :mod:`mtagent.agent.scripted` — a scripted chat model; :mod:`~mtagent.agent.demo` — ``mtagent demo``

Submodules are imported on demand, so ``import mtagent.agent.scripted`` stays light.
"""
