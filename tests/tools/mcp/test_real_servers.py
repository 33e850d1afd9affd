"""The client against the reference servers people really run: mcp-server-time and mcp-server-git
(PyPI, the dev extra) and @modelcontextprotocol/server-everything / server-filesystem (npm, installed
by .ci/run; skipped with the reason when absent)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tools.mcp.mcp_helpers import call, console_script, mcp_settings, npm_server, tools_of

from mtagent.agent.scripted import ScriptedChatModel, tool_call
from mtagent.agent.session import AgentSession
from mtagent.tools import default_tools
from mtagent.tools.mcp import McpManager


def test_mcp_server_time_in_a_scripted_session(project: Path) -> None:
    settings = mcp_settings({"time": {"command": console_script("mcp-server-time"), "args": ["--local-timezone", "UTC"]}},
                            agent={"approval": {"mcp__time__*": "allow"}})
    model = ScriptedChatModel([tool_call("mcp__time__convert_time", {"source_timezone": "UTC", "time": "12:00",
                                                                     "target_timezone": "Asia/Tokyo"}, id="t1"),
                               "It is 21:00 in Tokyo."])
    with McpManager.for_project(settings, project) as manager, \
            AgentSession.create(project, model=model, settings=settings,
                                tools=lambda c: [*default_tools(c.workspace.root, context=c), *manager.tools()]) as s:
        result = s.run_turn("noon UTC in Tokyo?")
    answer = model.calls[1][-1]
    assert result.status == "done" and answer.status == "success"
    assert json.loads(answer.content)["target"]["datetime"].endswith("T21:00:00+09:00")


def test_mcp_server_git_reads_a_real_repository(project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "new_file.py").write_text("print('hi')\n")
    settings = mcp_settings({"git": {"command": console_script("mcp-server-git"), "args": ["--repository", str(project)]}})
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        assert {"mcp__git__git_status", "mcp__git__git_log"} <= set(tools)
        status = call(tools["mcp__git__git_status"], repo_path=str(project))
        assert status.status == "success" and "new_file.py" in status.content
        outside = call(tools["mcp__git__git_status"], repo_path="/")  # the server confines itself; its error is a result
        assert outside.status == "error"


def test_server_everything_images_resources_and_instructions(project: Path) -> None:
    settings = mcp_settings({"everything": {"command": npm_server("mcp-server-everything")}})
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        image = call(tools["mcp__everything__get-tiny-image"])
        assert "[image: image/png" in image.content and "base64" not in image.content and len(image.content) < 500
        assert image.artifact["media"][0]["mime"] == "image/png"
        links = call(tools["mcp__everything__get-resource-links"], count=3)
        assert links.content.count("[resource link:") == 3 and len(links.artifact["resources"]) == 3
        ref = call(tools["mcp__everything__get-resource-reference"], resourceType="Blob", resourceId=1)
        assert "not shown" in ref.content and len(ref.content) < 1_000
        env = json.loads(call(tools["mcp__everything__get-env"]).content)
        assert set(env) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
        instructions = manager.instructions()["everything"]
        assert "not from the user" in instructions and len(instructions) < 4_096 + 400


def test_server_filesystem_reads_only_its_root(project: Path, tmp_path: Path) -> None:
    (project / "notes.txt").write_text("filesystem server works\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    settings = mcp_settings({"fs": {"command": npm_server("mcp-server-filesystem"), "args": [str(project)]}})
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        read = tools.get("mcp__fs__read_text_file") or tools["mcp__fs__read_file"]
        assert "filesystem server works" in call(read, path=str(project / "notes.txt")).content
        denied = call(read, path=str(outside))
        assert denied.status == "error" and "secret" not in denied.content


def test_server_everything_resources_are_listed_and_read(project: Path) -> None:
    settings = mcp_settings({"everything": {"command": npm_server("mcp-server-everything")}})
    with McpManager.for_project(settings, project) as manager:
        tools = tools_of(manager)
        listing = call(tools["mcp_list_resources"], server="everything")
        uri = next(line.split()[1] for line in listing.content.splitlines() if line.startswith("- demo://"))
        text = call(tools["mcp_read_resource"], server="everything", uri=uri)
        blob = call(tools["mcp_read_resource"], server="everything", uri="demo://resource/dynamic/blob/2")
    assert listing.status == "success" and "URI templates" in listing.content
    assert text.status == "success" and text.content.startswith(f"[resource {uri} (")
    assert "binary data, not shown" in blob.content and len(blob.content) < 500
