"""What the probes of ``security_regress.py`` and its ``security_probes_*`` waves share.

Each helper imports ``mtagent`` when called: a probe runs in a child process against whichever
tree's ``src`` is first on its path (the old commit's or today's), and only through surfaces both have.
"""

from __future__ import annotations

import json
from pathlib import Path


def quiet_settings(extra: dict | None = None) -> object:
    """Settings without retry waits or session memory, with ``extra``'s sections merged in."""
    from mtagent.config import Settings

    data: dict = {"agent": {"retry_base_seconds": 0.0}, "session_memory": {"enabled": False}}
    for section, body in (extra or {}).items():
        data.setdefault(section, {}).update(body)
    return Settings.model_validate(data)


def payload_text(model: object) -> str:
    """Every message of every request a scripted model was sent."""
    return "\n".join(str(m.content) for call in model.calls for m in call)  # type: ignore[attr-defined]


def empty_project(tmp: Path) -> Path:
    project = tmp / "project"
    project.mkdir()
    return project


def first_payload(project: Path, steps: list | None = None, settings: object = None, approval: str = "never",
                  prompt: str = "go") -> str:
    """What the model was sent in one turn (``prompt``) of a session in ``project`` that plays ``steps``."""
    from mtagent.agent.scripted import ScriptedChatModel
    from mtagent.agent.session import AgentSession

    model = ScriptedChatModel(steps or ["done"])
    with AgentSession.create(project, model=model, settings=settings or quiet_settings(), approval=approval) as s:
        s.run_turn(prompt)
    return payload_text(model)


def recorded_session(tmp: Path, reply: str, prompt: str = "hello") -> tuple[Path, str, Path]:
    """(project, session id, transcript) of a session whose one turn (``prompt``) the model answered ``reply``."""
    from mtagent.agent.scripted import ScriptedChatModel
    from mtagent.agent.session import AgentSession

    project = empty_project(tmp)
    with AgentSession.create(project, model=ScriptedChatModel([reply]), settings=quiet_settings()) as s:
        s.run_turn(prompt)
        return project, s.session_id, s.transcript_path


def cli(*args: str, stdin: str | None = None) -> object:
    """The ``mtagent`` command through typer's runner (its result: output, exception)."""
    from typer.testing import CliRunner

    from mtagent.cli.app import app

    return CliRunner().invoke(app, list(args), input=stdin)


def script(tmp: Path, steps: list) -> str:
    """A ``--model`` value naming a scripted model that plays ``steps``."""
    path = tmp / "script.json"
    path.write_text(json.dumps(steps), encoding="utf-8")
    return f"scripted:{path}"


def untrusted_settings(tmp: Path, config: str, **load: object) -> object:
    """What ``load_settings`` makes of a project nobody trusted whose ``.mtagent/config.toml`` is ``config``."""
    from mtagent.config import load_settings

    project = tmp / "project"
    (project / ".mtagent").mkdir(parents=True)
    (project / ".mtagent" / "config.toml").write_text(config)
    return load_settings(project, **load)
