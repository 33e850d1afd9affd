"""The explain UI as an ASGI app: routes, and the data each page template is given.

Pages (all GET, all read-only)::

    /                                      sessions of every project (``?q=`` searches)
    /p/<project>/s/<key>                   one session: timeline of its model calls
    /p/<project>/s/<key>/call/<n>          one call: the view, its plan, the diff to call n-1
    /p/<project>/s/<key>/artifacts         artifacts (``?q=`` searches them and the memory notes)
    /p/<project>/s/<key>/artifact?path=…   one artifact by line range (``&start=``)
    /p/<project>/s/<key>/raw?path=…        the whole artifact, streamed as text/plain
    /p/<project>/s/<key>/memory            the session-memory notes as they evolved
    /replay                                replay comparison (``?source=&strategy=&window=``)
    /eval                                  ``mtagent eval`` results (``?run=`` an index into its registry)

Templates are Jinja2 with autoescaping on; charts are SVG built (and escaped) in
:mod:`mtagent.ui.charts`. Handlers are plain functions run in a worker thread, since they read
files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from mtagent import paths
from mtagent.config import Settings, UiSettings
from mtagent.errors import ArtifactPathError, MTAgentError, ReplayFormatError, SessionNotFound, UsageError
from mtagent.replay.names import STRATEGY_NAMES
from mtagent.session.artifacts import ArtifactStore
from mtagent.ui import artifacts as art
from mtagent.ui.calls import BUCKET_ORDER, call_detail, call_points
from mtagent.ui import eval_page
from mtagent.ui.catalog import Catalog, SessionEntry, format_stamp
from mtagent.ui.charts import Series, css_name, fmt_tokens, line_chart, timeline_buckets, timeline_svg
from mtagent.ui.records import Outline, Redactor, TranscriptCache, default_redactor, read_range
from mtagent.ui.replay_page import ReplayRunner, list_sources, resolve_source
from mtagent.ui.security import Guard

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_REPLAY_STRATEGIES = ("raw", "mtagent", "masking")


@dataclass(slots=True)
class UiOptions:
    """What the app serves: whose sessions, which replay folders, and under which access rule."""

    cwd: Path = field(default_factory=Path.cwd)
    home: Path | None = None
    replay_dirs: list[Path] = field(default_factory=list)
    token: str | None = None
    loopback_only: bool = True
    settings: Settings = field(default_factory=Settings)
    redactor: Redactor | None = None
    # PostgreSQL mode: brings the local mirror (``home``) up to date before the sessions page
    refresh: Callable[[], object] | None = None


def session_url(entry_or_project: SessionEntry | str, key: str | None = None, tail: str = "") -> str:
    if isinstance(entry_or_project, SessionEntry):
        project, key = entry_or_project.project, entry_or_project.key
    else:
        project = entry_or_project
    return f"/p/{quote(project, safe='')}/s/{quote(str(key), safe='~')}{tail}"


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(PACKAGE_DIR / "templates")),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["tokens"] = fmt_tokens
    env.filters["num"] = lambda n: f"{int(n or 0):,}"
    env.filters["stamp"] = format_stamp
    env.filters["css"] = css_name
    env.filters["size"] = _size
    env.globals["session_url"] = session_url
    env.globals["quote"] = lambda s: quote(str(s), safe="")
    env.globals["urlencode"] = urlencode
    return env


def _size(n: int | None) -> str:
    n = int(n or 0)
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


class Pages:
    """Request handlers over one :class:`UiOptions` (kept small: data in, template name out)."""

    def __init__(self, options: UiOptions) -> None:
        self.options = options
        self.ui: UiSettings = options.settings.ui
        self.redactor = options.redactor or default_redactor(options.settings)
        self.catalog = Catalog(options.home)
        self.transcripts = TranscriptCache(self.redactor)
        self.replays = ReplayRunner(options.settings)
        self.env = _env()

    def render(self, name: str, status: int = 200, **data: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**data), status_code=status)

    def guarded(self, handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def run(request: Request) -> Response:
            try:
                return handler(request)
            except (SessionNotFound, ArtifactPathError) as exc:
                return self.render("error.html", 404, title="Not found", message=str(exc))
            except MTAgentError as exc:
                return self.render("error.html", 400, title="Cannot show this", message=str(exc))
        return run

    # ── sessions ─────────────────────────────────────────────────────────────────────
    def sessions(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        if self.options.refresh is not None:
            self.options.refresh()
        here = paths.project_hash(self.options.cwd)
        groups = []
        for project in self.catalog.projects():
            entries = [e for e in self.catalog.sessions(project) if e.matches(query)]
            if entries or project == here:
                cwd = next((e.stats.cwd for e in entries if e.stats.cwd), None)
                groups.append({"project": project, "cwd": cwd, "entries": entries, "here": project == here})
        groups.sort(key=lambda g: (not g["here"], g["project"]))
        return self.render("sessions.html", title="Sessions", query=query, groups=groups,
                           here=here, cwd=str(self.options.cwd))

    def _session(self, request: Request) -> tuple[SessionEntry, Outline]:
        project, key = request.path_params["project"], request.path_params["key"]
        entry = self.catalog.find(project, key)
        return entry, self.transcripts.outline(entry.path)

    def session(self, request: Request) -> Response:
        entry, outline = self._session(request)
        points = call_points(outline.records, outline.offsets)
        window = next((p.token_limit for p in reversed(points) if p.token_limit), None)
        threshold = next((p.threshold for p in reversed(points) if p.threshold), None)
        chart = timeline_svg(points, lambda n: session_url(entry, tail=f"/call/{n}"), window=window,
                             threshold=threshold)
        links: dict[str, dict[str, Any]] = {}
        for r in outline.records:
            if r.get("type") == "subagent":  # started, then finished: later fields win, earlier ones stay
                links.setdefault(str(r.get("child_id")), {}).update({k: v for k, v in r.items() if v is not None})
        compactions = [(p.number, c) for p in points for c in p.compactions]
        micro = [(p.number, m) for p in points for m in p.microcompacts]
        return self.render("session.html", title=f"Session {entry.key}", entry=entry, points=points,
                           chart=Markup(chart), buckets=timeline_buckets(points), window=window,
                           threshold=threshold, compactions=compactions, microcompacts=micro, links=links,
                           warnings=outline.warnings, plan=self.redacted_plan(entry.path))

    def redacted_plan(self, path: Any) -> Any:
        """The session's plan (its last plan call, or the last hand-off's), its text redacted like the page's."""
        from mtagent.context.ledger import plan_from_transcript

        plan = plan_from_transcript(path)
        if plan is None:
            return None
        text = self.transcripts.redactor.text
        return {"summary": text(plan.summary_line()), "note": text(plan.note),
                "steps": [{"text": text(s.text), "status": s.status} for s in plan.steps]}

    def call(self, request: Request) -> Response:
        entry, outline = self._session(request)
        number = request.path_params["n"]
        detail = call_detail(list(zip(outline.offsets, outline.records)), number,
                             lambda start, stop: read_range(entry.path, start, stop, self.redactor),
                             self.options.settings.context.compression_preserve_min_tokens)
        if detail is None:
            raise SessionNotFound(f"session {entry.key} has no model call {number}")
        count = len(call_points(outline.records))
        buckets = [(b, detail.point.buckets.get(b, 0)) for b in BUCKET_ORDER if detail.point.buckets.get(b)]
        buckets += [(b, v) for b, v in detail.point.buckets.items() if b not in BUCKET_ORDER and v]
        return self.render("call.html", title=f"Call {number} · {entry.key}", entry=entry, d=detail,
                           count=count, buckets=buckets, max_chars=self.ui.message_max_chars)

    # ── artifacts and memory ─────────────────────────────────────────────────────────
    def _store(self, entry: SessionEntry) -> ArtifactStore:
        return ArtifactStore(self.catalog.artifact_root(entry.project, entry.path))

    def artifacts(self, request: Request) -> Response:
        entry, outline = self._session(request)
        store = self._store(entry)
        listing = art.list_artifacts(store, outline.records)
        query = request.query_params.get("q", "")
        found = None
        if query:
            found = art.search(store, art.readable_paths(store, outline.records), query, self.redactor,
                               max_hits=self.ui.search_max_hits, max_chars=self.ui.line_max_chars)
        return self.render("artifacts.html", title=f"Artifacts · {entry.key}", entry=entry, listing=listing,
                           query=query, found=found, page_lines=self.ui.artifact_page_lines)

    def artifact(self, request: Request) -> Response:
        entry, _ = self._session(request)
        relative = request.query_params.get("path", "")
        start = _int_param(request, "start", 1)
        mark = _int_param(request, "line", 0)
        page = art.read_lines(self._store(entry), relative, start, self.ui.artifact_page_lines, self.redactor,
                              self.ui.line_max_chars)
        return self.render("artifact.html", title=f"{relative} · {entry.key}", entry=entry, page=page,
                           page_lines=self.ui.artifact_page_lines, mark=mark)

    def raw(self, request: Request) -> Response:
        entry, _ = self._session(request)
        relative = request.query_params.get("path", "")
        chunks = art.stream_artifact(self._store(entry), relative, self.redactor, self.ui.stream_chunk_bytes)
        return StreamingResponse(chunks, media_type="text/plain; charset=utf-8")

    def memory(self, request: Request) -> Response:
        entry, outline = self._session(request)
        project_memory = paths.memory_dir_of(entry.project, self.catalog.history.parent)
        return self.render("memory.html", title=f"Session memory · {entry.key}", entry=entry,
                           current=art.current_memory(self._store(entry), self.redactor),
                           history=art.memory_history(outline.records),
                           project_memory=art.project_memory(project_memory, self.redactor, self.ui.artifact_page_lines))

    # ── replay ───────────────────────────────────────────────────────────────────────
    def replay(self, request: Request) -> Response:
        sources = list_sources(self.catalog, self.options.replay_dirs)
        ref = request.query_params.get("source", "")
        chosen = request.query_params.getlist("strategy") or list(DEFAULT_REPLAY_STRATEGIES)
        window = _int_param(request, "window", self.options.settings.context.token_limit)
        comparison, charts = None, []
        if ref:
            source = resolve_source(self.catalog, self.options.replay_dirs, ref)
            try:
                comparison = self.replays.compare(source, chosen, window)
            except MTAgentError:
                raise
            except Exception as exc:  # a converter choking on a malformed recording is that file's problem
                raise ReplayFormatError(f"cannot replay {source.label}: {type(exc).__name__}: {exc}") from exc
            charts = [_replay_charts(s, comparison.strategies) for s in comparison.sessions]
        return self.render("replay.html", title="Replay comparison", sources=sources, ref=ref, chosen=chosen,
                           window=window, strategies=STRATEGY_NAMES, comparison=comparison, charts=charts)

    def evaluation(self, request: Request) -> Response:
        data = eval_page.eval_context(self.options.home, request.query_params.get("run", ""))
        return self.render("eval.html", title="Evaluation", **data)


def _replay_charts(session: Any, names: list[str]) -> dict[str, Markup]:
    tokens = [Series(n, [t.view_tokens for t in session.results[n].turns],
                     [i for i, t in enumerate(session.results[n].turns) if t.compacted]) for n in names]
    cost = [Series(n, list(accumulate(t.costs.get("anthropic", 0.0) for t in session.results[n].turns))) for n in names]
    return {
        "tokens": Markup(line_chart(tokens, title="view tokens per model call", limit=session.window,
                                    limit_label=f"window {session.window:,}")),
        "cost": Markup(line_chart(cost, title="cumulative cost per model call (input-token equivalents)")),
    }


def _int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name, "")
    try:
        return int(raw) if raw else default
    except ValueError:
        raise UsageError(f"{name}={raw!r} is not a whole number") from None


def create_app(options: UiOptions | None = None) -> Any:
    """The ASGI app (Starlette inside :class:`~mtagent.ui.security.Guard`)."""
    options = options or UiOptions()
    pages = Pages(options)
    g = pages.guarded
    base = "/p/{project}/s/{key}"
    routes = [
        Route("/", g(pages.sessions)),
        Route(base, g(pages.session)),
        Route(base + "/call/{n:int}", g(pages.call)),
        Route(base + "/artifacts", g(pages.artifacts)),
        Route(base + "/artifact", g(pages.artifact)),
        Route(base + "/raw", g(pages.raw)),
        Route(base + "/memory", g(pages.memory)),
        Route("/replay", g(pages.replay)),
        Route("/eval", g(pages.evaluation)),
        Mount("/static", StaticFiles(directory=str(PACKAGE_DIR / "static")), name="static"),
    ]
    app = Starlette(routes=routes)
    return Guard(app, options.token, options.loopback_only)
