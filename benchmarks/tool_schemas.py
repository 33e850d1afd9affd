"""Tool schemas in small windows: the fixed cost of every call, full against compact.

    python benchmarks/tool_schemas.py [--quick]

Opens a session (the scripted model, the default tools with subagents on, an empty project, a
temporary MTAGENT_HOME) per window size and reports what ``agent.tool_schemas = auto`` chose:
system prompt + tool schemas in full and as sent, counted with the real tokenizer exactly as the
engine's ``system``/``tools`` buckets count them. ``--quick`` measures the same windows (it takes
seconds either way). Ends with RESULT lines.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

WINDOWS = (4_096, 8_192, 16_384, 32_768, 131_072)


def measure(window: int, root: Path) -> dict[str, object]:
    from mtagent.agent.scripted import ScriptedChatModel
    from mtagent.agent.session import AgentSession
    from mtagent.config import Settings

    settings = Settings.model_validate({"context": {"token_limit": window}})
    with AgentSession.create(root, model=ScriptedChatModel(steps=[]), settings=settings) as session:
        choice = session.schema_choice
        return {"window": window, "mode": choice.mode, "full": choice.full_tokens, "sent": choice.tokens,
                "schemas": choice.schema_tokens, "share": choice.share, "full_share": choice.full_share,
                "dropped": ",".join(choice.dropped) or "-"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the same measurement (it is fast)")
    parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MTAGENT_HOME"] = str(Path(tmp) / "home")
        root = Path(tmp) / "project"
        root.mkdir()
        rows = [measure(w, root) for w in WINDOWS]
    print(f"{'window':>8} {'mode':>8} {'full':>6} {'full %':>7} {'sent':>6} {'schemas':>8} {'sent %':>7}  not offered")
    for r in rows:
        print(f"{r['window']:>8,} {r['mode']:>8} {r['full']:>6,} {r['full_share']:>7.1%} {r['sent']:>6,} "
              f"{r['schemas']:>8,} {r['share']:>7.1%}  {r['dropped']}")
    by_window = {r["window"]: r for r in rows}
    compact = next(r for r in rows if r["mode"] == "compact")
    print(f"RESULT full_schema_and_system_tokens={rows[-1]['full']}")
    print(f"RESULT full_schema_tokens={by_window[131_072]['schemas']}")
    print(f"RESULT compact_schema_and_system_tokens={compact['sent']}")
    print(f"RESULT compact_schema_tokens={compact['schemas']}")
    for window, label in ((4_096, "4k"), (8_192, "8k"), (131_072, "131k")):
        print(f"RESULT share_{label}={by_window[window]['share']:.3f}")
        print(f"RESULT compact_{label}={int(by_window[window]['mode'] == 'compact')}")


if __name__ == "__main__":
    main()
