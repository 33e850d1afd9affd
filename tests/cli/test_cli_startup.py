"""`mtagent --help` and `--version` stay quick: importing the CLI must not load the agent stack."""

import subprocess
import sys

from model_script import script


def test_importing_the_cli_loads_neither_the_agent_nor_langsmith():
    code = ("import sys, mtagent.cli.app; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'langsmith', 'langgraph', 'openai'}), "
            "sorted(m for m in sys.modules if m.startswith('mtagent.agent')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] []"


def _loaded_after(args: list[str]) -> set[str]:
    code = ("import sys, runpy; sys.argv = ['mtagent', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('mtagent', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:])


def test_version_loads_neither_typer_nor_rich():
    loaded = _loaded_after(["--version"])
    assert not {"typer", "rich", "pydantic", "mtagent.config"} & loaded


def test_root_help_loads_no_command_module_no_config_and_no_langchain():
    loaded = _loaded_after(["--help"])
    assert "typer" in loaded
    heavy = {m for m in loaded if m.endswith("_cmd") or m in ("mtagent.config", "pydantic", "langchain_core", "rich")}
    assert heavy == set()


def test_python_dash_m_mtagent_prints_the_version():
    proc = subprocess.run([sys.executable, "-m", "mtagent", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("mtagent ")


REPL_PROBE = """
import json, sys
from pathlib import Path
from prompt_toolkit import PromptSession
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console
from mtagent.cli.repl import Repl, key_bindings
from mtagent.cli.session_options import SessionOptions

HEAVY = ("langchain_openai", "openai", "langgraph", "langchain_core.language_models", "mtagent.agent.session",
         "mtagent.tools.registry", "mtagent.cli.slash")
seen = {}

class Probe(PromptSession):
    def prompt(self, *args, **kwargs):
        seen.setdefault("first_prompt", sorted(m for m in HEAVY if m in sys.modules))
        return super().prompt(*args, **kwargs)

with create_pipe_input() as pipe:
    session = Probe(input=pipe, output=DummyOutput(), key_bindings=key_bindings(), multiline=True)
    repl = Repl(SessionOptions(cwd=Path(sys.argv[1]), model=sys.argv[2], base_url="http://127.0.0.1:9/v1"),
                console=Console(width=120), prompt_session=session)
    pipe.send_text("/help\\r/exit\\r")  # a command: the session opens for it, no model is called
    repl.run()
seen["after"] = sorted(m for m in HEAVY if m in sys.modules)
print("PROBE " + json.dumps(seen))
"""


def _repl_probe(project, model: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", REPL_PROBE, str(project), model], capture_output=True,
                          text=True, timeout=180)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("PROBE ")), None)
    assert line is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    import json

    return json.loads(line[len("PROBE "):])


def test_the_repl_prompt_comes_before_the_agent_stack_and_the_provider_sdk(project):
    """The prompt is drawn first; LangChain's models, LangGraph, the provider SDK and the slash
    commands are imported in the background while the user types, and the session opens after."""
    seen = _repl_probe(project, "openai:gpt-4o-mini")
    assert seen["first_prompt"] == []
    assert {"langchain_openai", "langgraph", "mtagent.agent.session", "mtagent.cli.slash"} <= set(seen["after"])


def test_a_scripted_model_never_imports_a_provider_sdk(project, tmp_path):
    seen = _repl_probe(project, script(tmp_path, ["Hi."]))
    assert seen["first_prompt"] == []
    assert "mtagent.agent.session" in seen["after"] and not {"langchain_openai", "openai"} & set(seen["after"])


def test_config_path_loads_no_config_models():
    loaded = _loaded_after(["config", "path"])
    assert not {"mtagent.config", "mtagent.config_sections", "langchain_core"} & loaded


def test_completion_never_loads_the_agent_or_a_provider_sdk():
    import os

    env = {**os.environ, "_MTAGENT_COMPLETE": "complete_bash", "COMP_WORDS": "mtagent sessions sh", "COMP_CWORD": "2"}
    code = ("import sys, runpy; sys.argv = ['mtagent']\n"
            "try:\n    runpy.run_module('mtagent', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert "show" in proc.stdout.split()
    loaded = set(next(x for x in proc.stderr.splitlines() if x.startswith("MODULES ")).split()[1:])
    assert not {m for m in loaded if m.startswith(("mtagent.agent", "langchain_openai", "langgraph", "openai"))}
