"""`mtagent --help` and `--version` stay quick: importing the CLI must not load the agent stack."""

import subprocess
import sys


def test_importing_the_cli_loads_neither_the_agent_nor_langsmith():
    code = ("import sys, mtagent.cli.app; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'langsmith', 'langgraph', 'openai'}), "
            "sorted(m for m in sys.modules if m.startswith('mtagent.agent')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] []"
