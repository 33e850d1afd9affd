"""Tool-result budget on real tool outputs: what the model sees vs what the tools printed.

    python benchmarks/tool_results_bench.py [--quick] [--trajectories DIR]

Every tool output in the shared trajectories (Claude Code ``tool_result`` blocks, mini-swe-agent
``role: tool`` messages (untruncated ``extra.raw_output`` when present), OpenHands observations,
SWE-agent observations, aider ``>`` terminal blocks) is turned into a ToolMessage named after our
equivalent tool (Bash → shell, Grep → grep, Read → read_file, …), grouped by the assistant turn
that produced it, and passed through ``ToolResultBudgeter.budget_turn`` with the default policy
and a temporary artifact store. Per source it reports raw and model-visible characters, how many
results were persisted (per-tool limit or per-turn aggregate), the largest result the model sees,
how many error/warning lines of persisted shell/log output survive in the preview, and that the
artifacts hold the raw text byte for byte. Writes benchmarks/results/tool_results_bench.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.messages import ToolMessage

from results_file import results_file
from mtagent.context.tool_results import previews
from mtagent.context.tool_results.budgeter import ToolResultBudgeter, ToolResultPolicy
from mtagent.session.artifacts import ArtifactStore

HERE = Path(__file__).resolve().parent
DEFAULT_TRAJECTORIES = HERE.parents[1] / "shared" / "trajectories"

Turn = list[tuple[str, str]]  # (our tool name, raw output) per result of one assistant turn

CC_NAMES = {"bash": "shell", "grep": "grep", "read": "read_file", "glob": "glob", "ls": "ls",
            "edit": "edit_file", "multiedit": "edit_file", "write": "write_file", "notebookedit": "edit_file"}
OH_NAMES = {"run": "shell", "run_ipython": "shell", "read": "read_file", "edit": "edit_file"}
SWE_GREP = {"search_dir", "search_file", "find_file", "grep", "find"}
SWE_VIEW = {"open", "goto", "scroll_up", "scroll_down", "create"}
SWE_EDIT = {"edit", "str_replace_editor", "insert"}


def _text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(parts) if parts else None
    return None


# ── extractors, one per format (see shared/trajectories/FORMATS.md) ────────────────────


def claude_code(path: Path) -> Iterator[Turn]:
    names: dict[str, tuple[str, str]] = {}  # tool_use id → (tool, assistant message id)
    turns: dict[str, Turn] = {}
    for line in path.open(encoding="utf-8"):
        rec = json.loads(line)
        msg = rec.get("message") or {}
        if rec.get("type") == "assistant":
            for block in msg.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    names[block["id"]] = (CC_NAMES.get(block["name"].lower(), block["name"].lower()), msg.get("id", ""))
        elif rec.get("type") == "user" and isinstance(msg.get("content"), list):
            for block in msg["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    text = _text(block.get("content"))
                    if text is not None:
                        tool, turn = names.get(block.get("tool_use_id", ""), ("unknown", block.get("tool_use_id", "")))
                        turns.setdefault(turn, []).append((tool, text))
    yield from turns.values()


def mini_swe_agent(path: Path) -> Iterator[Turn]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):  # v1: every user message after the first answers the previous action
        for msg in [m for m in data if m.get("role") == "user"][1:]:
            yield [("shell", msg.get("content") or "")]
        return
    turn: Turn = []
    for msg in data.get("messages", []):
        if msg.get("role") == "assistant":
            if turn:
                yield turn
            turn = []
        elif msg.get("role") == "tool":
            raw = (msg.get("extra") or {}).get("raw_output")
            turn.append(("shell", raw if isinstance(raw, str) else _text(msg.get("content")) or ""))
    if turn:
        yield turn


def openhands(path: Path) -> Iterator[Turn]:
    if path.suffix == ".jsonl":
        for line in path.open(encoding="utf-8"):
            for event in json.loads(line).get("history", []):
                if "observation" in event and event["observation"] in OH_NAMES:
                    yield [(OH_NAMES[event["observation"]], event.get("content") or "")]
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    events = data["history"] if isinstance(data, dict) else data
    turns: dict[str, Turn] = {}
    for event in events:
        if "observation" not in event or event["observation"] in ("recall", "agent_state_changed", "null"):
            continue
        meta = event.get("tool_call_metadata") or {}
        turn = (meta.get("model_response") or {}).get("id") or f"event-{event.get('id')}"
        tool = OH_NAMES.get(event["observation"], event["observation"])
        turns.setdefault(turn, []).append((tool, event.get("content") or ""))
    yield from turns.values()


def _swe_name(action: str) -> str:
    word = (action.strip().split() or [""])[0]
    if word in SWE_GREP:
        return "grep"
    if word in SWE_VIEW:
        return "file_viewer"
    if word in SWE_EDIT:
        return "edit_file"
    return "shell"


def swe_agent(path: Path) -> Iterator[Turn]:
    if path.suffix == ".yaml":
        import yaml

        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    else:
        data = json.loads(path.read_text(encoding="utf-8"))
    steps = data.get("trajectory") or []
    if steps:
        for step in steps:
            yield [(_swe_name(step.get("action") or ""), step.get("observation") or "")]
        return
    last_action = ""
    for msg in data.get("history", []):
        if msg.get("role") == "assistant":
            calls = msg.get("tool_calls") or []
            last_action = calls[0]["function"]["name"] if calls else (msg.get("action") or "")
        elif msg.get("role") == "tool" or msg.get("message_type") == "observation":
            if msg.get("role") == "user" and not last_action:
                continue
            yield [(_swe_name(last_action), _text(msg.get("content")) or "")]


def aider(path: Path, max_chars: int | None) -> Iterator[Turn]:
    text = path.read_text(encoding="utf-8")
    if max_chars:
        text = text[:max_chars]
    block: list[str] = []
    for line in text.splitlines():
        line = line.rstrip()
        if line.startswith(">") and not line.startswith(">>>>>>>"):
            block.append(line[2:] if line.startswith("> ") else line[1:])
            continue
        if block:
            yield [("shell", "\n".join(block))]
            block = []
    if block:
        yield [("shell", "\n".join(block))]


def sources(root: Path, quick: bool) -> dict[str, Iterator[Turn]]:
    def files(folder: str, *patterns: str) -> list[Path]:
        found = sorted({p for pattern in patterns for p in (root / folder).glob(pattern)})
        return found[:3] if quick else found

    def chain(paths: list[Path], fn) -> Iterator[Turn]:
        for p in paths:
            yield from fn(p)

    return {
        "claude-code": chain(files("claude-code", "*.jsonl"), claude_code),
        "mini-swe-agent": chain(files("mini-swe-agent", "*.json"), mini_swe_agent),
        "openhands": chain(files("openhands", "*.json", "*.jsonl"), openhands),
        "swe-agent": chain(files("swe-agent", "*.traj", "*.yaml"), swe_agent),
        "aider": chain(files("aider", "*.md"), lambda p: aider(p, 400_000 if quick else None)),
    }


# ── measurement ─────────────────────────────────────────────────────────────────────────


@dataclass
class Row:
    source: str
    results: int = 0
    turns: int = 0
    raw_chars: int = 0
    seen_chars: int = 0
    persisted_tool: int = 0
    persisted_aggregate: int = 0
    max_raw: int = 0
    max_seen: int = 0
    error_lines: int = 0
    error_lines_kept: int = 0
    artifacts_ok: int = 0
    seconds: float = 0.0
    by_tool: dict[str, list[int]] = field(default_factory=dict)

    @property
    def persisted(self) -> int:
        return self.persisted_tool + self.persisted_aggregate


def _error_lines(text: str) -> list[str]:
    return [previews._cut_line(line) for line in text.splitlines() if previews.ERROR_LINE.search(line)]


# A tenth of the default limits: on these (already agent-truncated) outputs the defaults rarely
# fire, so this pass shows what the previews keep when they do.
TIGHT = ToolResultPolicy(grep_max_chars=2_000, shell_max_chars=3_000, default_max_chars=5_000,
                         aggregate_max_chars=20_000, preview_chars=1_000)


def measure(source: str, turns: Iterator[Turn], store: ArtifactStore, policy: ToolResultPolicy) -> Row:
    row = Row(source)
    budgeter = ToolResultBudgeter(policy, artifacts=store)
    for t, turn in enumerate(turns):
        messages = [ToolMessage(content=raw, name=tool, tool_call_id=f"{source}-{t}-{i}", id=f"m-{source}-{t}-{i}")
                    for i, (tool, raw) in enumerate(turn)]
        started = time.perf_counter()
        out = budgeter.budget_turn(messages)
        row.seconds += time.perf_counter() - started
        row.turns += 1
        for (tool, raw), msg in zip(turn, out, strict=True):
            seen = len(msg.content)
            row.results += 1
            row.raw_chars += len(raw)
            row.seen_chars += seen
            row.max_raw = max(row.max_raw, len(raw))
            row.max_seen = max(row.max_seen, seen)
            stats = row.by_tool.setdefault(tool, [0, 0, 0, 0])
            stats[0] += 1
            stats[1] += len(raw)
            stats[2] += seen
            budget = msg.artifact["budget"]
            if budget["decision"] == "persisted":
                stats[3] += 1
                if budget.get("reason") == "aggregate":
                    row.persisted_aggregate += 1
                else:
                    row.persisted_tool += 1
                row.artifacts_ok += store.read_text(msg.artifact["artifact"]) == raw
                if msg.artifact.get("preview_kind") == "shell":
                    wanted = _error_lines(raw)
                    row.error_lines += len(wanted)
                    row.error_lines_kept += sum(1 for line in wanted if line in msg.content)
    return row


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "n/a"


def render(rows: list[Row], total: Row) -> str:
    head = ("| source | results | turns | raw chars | seen chars | kept | persisted (tool/aggregate) | "
            "largest raw | largest seen | error lines kept | µs/result |")
    lines = [head, "|" + "---|" * 11]
    for r in [*rows, total]:
        lines.append(
            f"| {r.source} | {r.results:,} | {r.turns:,} | {r.raw_chars:,} | {r.seen_chars:,} | "
            f"{_pct(r.seen_chars, r.raw_chars)} | {r.persisted} ({r.persisted_tool}/{r.persisted_aggregate}) | "
            f"{r.max_raw:,} | {r.max_seen:,} | {_pct(r.error_lines_kept, r.error_lines)} "
            f"({r.error_lines_kept}/{r.error_lines}) | {1e6 * r.seconds / max(1, r.results):.0f} |"
        )
    tools: dict[str, list[int]] = {}
    for r in rows:
        for name, s in r.by_tool.items():
            acc = tools.setdefault(name, [0, 0, 0, 0])
            for i in range(4):
                acc[i] += s[i]
    lines += ["", "| tool (ours) | results | raw chars | seen chars | kept | persisted |", "|---|---|---|---|---|---|"]
    for name, s in sorted(tools.items(), key=lambda kv: -kv[1][1])[:12]:
        lines.append(f"| {name} | {s[0]:,} | {s[1]:,} | {s[2]:,} | {_pct(s[2], s[1])} | {s[3]} |")
    return "\n".join(lines)


def run_pass(args: argparse.Namespace, policy: ToolResultPolicy, folder: Path) -> tuple[list[Row], Row]:
    rows = [measure(name, turns, ArtifactStore(folder / name), policy)
            for name, turns in sources(args.trajectories, args.quick).items()]
    total = Row("all")
    for r in rows:
        for attr in ("results", "turns", "raw_chars", "seen_chars", "persisted_tool", "persisted_aggregate",
                     "error_lines", "error_lines_kept", "artifacts_ok", "seconds"):
            setattr(total, attr, getattr(total, attr) + getattr(r, attr))
        total.max_raw = max(total.max_raw, r.max_raw)
        total.max_seen = max(total.max_seen, r.max_seen)
    return rows, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 files per source, the first 400 KB of aider")
    parser.add_argument("--trajectories", type=Path, default=DEFAULT_TRAJECTORIES)
    args = parser.parse_args(argv)
    if not args.trajectories.is_dir():
        print(f"trajectories not found at {args.trajectories}", file=sys.stderr)
        return 2
    policy = ToolResultPolicy()
    with tempfile.TemporaryDirectory() as tmp:
        rows, total = run_pass(args, policy, Path(tmp) / "default")
        tight_rows, tight = run_pass(args, TIGHT, Path(tmp) / "tight")
    mode = "quick" if args.quick else "full"
    sections = []
    passes = (("Default policy", policy, rows, total), ("Tight policy (stress)", TIGHT, tight_rows, tight))
    for title, p, rs, t in passes:
        sections.append(
            f"## {title}: grep {p.grep_max_chars:,}, shell {p.shell_max_chars:,}, default "
            f"{p.default_max_chars:,} chars, aggregate {p.aggregate_max_chars:,} per turn, preview "
            f"{p.preview_chars:,}; read_file never persisted\n\n{render(rs, t)}\n"
        )
    report = f"# Tool-result budget on real trajectories ({mode} run)\n\n" + "\n".join(sections)
    print(report)
    out = results_file("tool_results_bench.md")
    out.write_text(report, encoding="utf-8")
    print(f"\nwrote {out.relative_to(HERE.parent)}")
    print(f"RESULT tool_output_kept_ratio={total.seen_chars / max(1, total.raw_chars):.4f}")
    print(f"RESULT tool_output_raw_chars={total.raw_chars}")
    print(f"RESULT tool_output_seen_chars={total.seen_chars}")
    print(f"RESULT tool_results_total={total.results}")
    print(f"RESULT tool_results_persisted={total.persisted}")
    print(f"RESULT tool_results_persisted_by_aggregate={total.persisted_aggregate}")
    print(f"RESULT max_result_chars_seen={total.max_seen}")
    if total.error_lines:  # the default limits rarely fire on these outputs; see the tight pass
        print(f"RESULT preview_error_line_recall={total.error_lines_kept / total.error_lines:.4f}")
    print(f"RESULT artifacts_lossless={total.artifacts_ok}/{total.persisted}")
    print(f"RESULT budget_us_per_result={1e6 * total.seconds / max(1, total.results):.1f}")
    print(f"RESULT tight_tool_output_kept_ratio={tight.seen_chars / max(1, tight.raw_chars):.4f}")
    print(f"RESULT tight_tool_results_persisted={tight.persisted}")
    print(f"RESULT tight_preview_error_line_recall={tight.error_lines_kept / max(1, tight.error_lines):.4f}")
    print(f"RESULT tight_artifacts_lossless={tight.artifacts_ok}/{tight.persisted}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
