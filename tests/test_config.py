"""Settings: spec defaults, layering, and errors that name the key and the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mtagent import paths
from mtagent.config import Settings, load_settings, settings_reference
from mtagent.errors import ConfigError


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_the_spec_numbers():
    s = Settings()
    assert s.context.token_limit == 131072
    assert s.context.summary_reserved_tokens == 20000
    assert s.context.autocompact_buffer_tokens == 13000
    assert s.context.compression_preserve_min_tokens == 10000
    assert s.context.compression_preserve_max_tokens == 40000
    assert s.context.compact_max_consecutive_failures == 3
    assert s.tool_results.grep_max_chars == 20000
    assert s.tool_results.shell_max_chars == 30000
    assert s.tool_results.default_max_chars == 50000
    assert s.tool_results.aggregate_max_chars == 200000
    assert s.tool_results.artifact_max_bytes == 64 * 1024 * 1024
    assert s.read_file.max_size_bytes == 256 * 1024 and s.read_file.max_tokens == 25000
    assert s.microcompact.gap_threshold_minutes == 60 and s.microcompact.keep_recent == 5
    assert s.session_memory.init_tokens == 10000
    assert s.session_memory.update_min_tokens == 5000
    assert s.session_memory.update_min_tool_calls == 3
    assert s.transcript.fsync == "turn"


def test_layers_apply_in_order_global_project_env_arguments(tmp_path):
    _write(paths.global_config_path(), "[context]\ntoken_limit = 4000\nsummary_reserved_tokens = 100\n")
    _write(tmp_path / ".mtagent" / "config.toml", "[context]\ntoken_limit = 2000\nautocompact_buffer_tokens = 50\n")
    env = {"MTAGENT_CONTEXT__AUTOCOMPACT_BUFFER_TOKENS": "60", "MTAGENT_HOME": os.environ["MTAGENT_HOME"]}
    s = load_settings(tmp_path, environ=env)
    assert (s.context.token_limit, s.context.summary_reserved_tokens, s.context.autocompact_buffer_tokens) == (2000, 100, 60)
    s = load_settings(tmp_path, overrides={"context": {"token_limit": 3000}}, environ=env)
    assert s.context.token_limit == 3000


def test_environment_values_are_parsed_as_toml_literals():
    s = load_settings(environ={"MTAGENT_MICROCOMPACT__COMPACTABLE_TOOLS": '["grep", "shell"]',
                               "MTAGENT_AGENT__MODEL": "openai:gpt-4o-mini",
                               "MTAGENT_CONTEXT__AUTO_COMPACT_THRESHOLD": "0.75"})
    assert s.microcompact.compactable_tools == ["grep", "shell"]
    assert s.agent.model == "openai:gpt-4o-mini"
    assert s.auto_compact_threshold_tokens(100_000) == 75_000


def test_unknown_key_names_the_key_and_the_file(tmp_path):
    cfg = _write(tmp_path / ".mtagent" / "config.toml", "[context]\ntokne_limit = 5\n")
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, environ={})
    assert "context.tokne_limit" in str(err.value) and str(cfg) in str(err.value)


def test_unknown_section_is_an_error(tmp_path):
    _write(tmp_path / ".mtagent" / "config.toml", "[contxt]\ntoken_limit = 5\n")
    with pytest.raises(ConfigError, match=r"unknown config section \[contxt\]"):
        load_settings(tmp_path, environ={})


def test_wrong_type_names_the_key_and_its_source(tmp_path):
    cfg = _write(tmp_path / ".mtagent" / "config.toml", '[context]\ntoken_limit = "lots"\n')
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, environ={})
    assert "context.token_limit" in str(err.value) and str(cfg) in str(err.value)


def test_bad_environment_value_names_the_environment():
    with pytest.raises(ConfigError, match="context.token_limit.*environment"):
        load_settings(environ={"MTAGENT_CONTEXT__TOKEN_LIMIT": "-5"})


def test_environment_variable_without_section_is_explained():
    with pytest.raises(ConfigError, match="MTAGENT_<SECTION>__<KEY>"):
        load_settings(environ={"MTAGENT_TOKEN_LIMIT": "5"})


def test_invalid_toml_is_reported_with_its_path(tmp_path):
    cfg = _write(tmp_path / ".mtagent" / "config.toml", "[context\n")
    with pytest.raises(ConfigError, match="not valid TOML") as err:
        load_settings(tmp_path, environ={})
    assert str(cfg) in str(err.value)


def _load_as_nobody(project: Path, home: Path) -> str:
    """``load_settings`` in a forked child that dropped root to ``nobody``; the ConfigError text."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.environ["MTAGENT_HOME"] = str(home)  # the test's home is root-only
            try:
                load_settings(project, environ={})
                message = "loaded without error"
            except ConfigError as exc:
                message = str(exc)
            os.write(write_end, message.encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        out = fh.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    return out


def test_unreadable_config_is_reported(tmp_path):
    """Root reads any file, so as root (CI) the check runs in a child that drops to ``nobody``."""
    if os.geteuid() != 0:
        cfg = _write(tmp_path / ".mtagent" / "config.toml", "[context]\n")
        cfg.chmod(0)
        with pytest.raises(ConfigError, match="cannot read"):
            load_settings(tmp_path, environ={})
        return
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="mtagent-unreadable-", dir="/tmp"))  # traversable by nobody
    try:
        base.chmod(0o755)
        project = base / "project"
        cfg = _write(project / ".mtagent" / "config.toml", "[context]\n")
        for folder in (project, project / ".mtagent"):
            folder.chmod(0o755)
        cfg.chmod(0)
        out = _load_as_nobody(project, base / "home")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert f"cannot read config file {cfg}" in out and "fix its permissions" in out


def test_config_path_that_is_a_directory_is_reported(tmp_path):
    (tmp_path / ".mtagent" / "config.toml").mkdir(parents=True)
    with pytest.raises(ConfigError, match="is a directory"):
        load_settings(tmp_path, environ={})


@pytest.mark.parametrize("bad", [0, -3, 1, 1.5, True])
def test_threshold_override_rejects_ambiguous_values(bad):
    with pytest.raises(ConfigError, match="auto_compact_threshold"):
        load_settings(overrides={"context": {"auto_compact_threshold": bad}}, environ={})


def test_reference_lists_every_setting_with_its_default():
    rows = {key: default for key, default, _ in settings_reference()}
    assert rows["context.token_limit"] == "131072"
    assert rows["tool_results.grep_max_chars"] == "20000"
    assert len(rows) == sum(len(m.model_fields) for m in (type(getattr(Settings(), n)) for n in Settings.model_fields))
