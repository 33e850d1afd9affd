"""`mtagent --help` and `--version` stay quick: importing the CLI must not load the agent stack."""

import subprocess
import sys


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
