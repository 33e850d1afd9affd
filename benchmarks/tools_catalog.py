"""The tool catalog of ``tools_bench.py``: hand-written tools with paraphrased queries, plus generated ones.

**Where it comes from.** The ``SEEDS`` are tools modelled on public MCP servers' tools — the
reference servers (filesystem, git, time, fetch, memory, everything), GitHub's, Slack's, Sentry's,
Linear's, Notion's, PostgreSQL/SQLite, Brave search, Puppeteer/Playwright, Kubernetes, Stripe,
Google Drive/Calendar, Jira. Names and parameter names follow those servers' conventions;
descriptions are written here in our own words (one or two sentences, as those servers do). Each
seed has two queries: how a model *paraphrases* the need without quoting the description (the
words differ on purpose — "open a bug report" for ``create_issue``).

**The rest** of a 500-tool catalog is generated: verbs × resources of plausible SaaS servers
(``mcp__crm__update_contact``), each with a templated description and 2–5 documented parameters, so
the schemas weigh what real ones do (~100–250 tokens each) and the seeds have many near-neighbours
(``list_issues`` beside ``create_issue``, a ``ticket`` server beside ``jira``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CatalogTool:
    server: str
    name: str
    description: str
    params: tuple[tuple[str, str], ...]  # (name, description)
    queries: tuple[str, ...] = field(default=())

    @property
    def full_name(self) -> str:
        return f"mcp__{self.server}__{self.name}"


def _p(*pairs: str) -> tuple[tuple[str, str], ...]:
    return tuple((pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2))


SEEDS: tuple[CatalogTool, ...] = (
    CatalogTool("filesystem", "read_text_file", "Read the complete contents of a file as text. Use head or tail to read only part.",
                _p("path", "file to read", "head", "first N lines only", "tail", "last N lines only"),
                ("show me what is inside config.yaml", "load a document's text from disk")),
    CatalogTool("filesystem", "write_file", "Create a new file or completely overwrite an existing file with new content.",
                _p("path", "where to write", "content", "the new content"),
                ("save this text to disk as notes.txt", "overwrite a document with new contents")),
    CatalogTool("filesystem", "directory_tree", "Get a recursive tree view of files and directories as JSON.",
                _p("path", "root directory"),
                ("nested listing of every folder below src", "recursive structure of a folder")),
    CatalogTool("filesystem", "move_file", "Move or rename files and directories.",
                _p("source", "current path", "destination", "new path"),
                ("rename report.md to summary.md", "relocate a folder somewhere else")),
    CatalogTool("git", "git_status", "Shows the working tree status of a git repository.",
                _p("repo_path", "path to the repository"),
                ("which files have uncommitted changes", "is my checkout clean")),
    CatalogTool("git", "git_diff_staged", "Shows changes that are staged for commit.",
                _p("repo_path", "path to the repository", "context_lines", "lines of context"),
                ("what will go into the next commit", "show the changes I already added to the index")),
    CatalogTool("git", "git_log", "Shows the commit logs of a repository.",
                _p("repo_path", "path to the repository", "max_count", "commits to show"),
                ("history of recent commits", "who changed things lately and when")),
    CatalogTool("git", "git_create_branch", "Creates a new branch from an optional base branch.",
                _p("repo_path", "path", "branch_name", "new branch", "base_branch", "start point"),
                ("start a feature branch off main", "make a new line of development")),
    CatalogTool("time", "get_current_time", "Get the current time in a specific timezone.",
                _p("timezone", "IANA timezone name"),
                ("what time is it in Tokyo right now", "the clock in Europe/Paris")),
    CatalogTool("time", "convert_time", "Convert a time between timezones.",
                _p("source_timezone", "from", "time", "HH:MM", "target_timezone", "to"),
                ("if it is 9am in New York what hour is it in Berlin", "translate a meeting hour to another zone")),
    CatalogTool("fetch", "fetch", "Fetches a URL from the internet and extracts its contents as markdown.",
                _p("url", "address", "max_length", "characters to return", "raw", "skip simplification"),
                ("download this web page and give me the text", "grab the content at an http address")),
    CatalogTool("memory", "create_entities", "Create multiple new entities in the knowledge graph.",
                _p("entities", "entities with name, type and observations"),
                ("remember these people and projects as nodes", "add new nodes to my knowledge graph")),
    CatalogTool("memory", "search_nodes", "Search for nodes in the knowledge graph based on a query.",
                _p("query", "text to match against names, types and observations"),
                ("look up what I stored about Alice", "find remembered facts matching a word")),
    CatalogTool("github", "create_issue", "Create a new issue in a GitHub repository.",
                _p("owner", "repository owner", "repo", "repository name", "title", "issue title", "body", "issue body"),
                ("open a bug report on the project", "file a ticket in the repo for this crash")),
    CatalogTool("github", "create_pull_request", "Create a new pull request in a GitHub repository.",
                _p("owner", "owner", "repo", "repository", "title", "title", "head", "branch with changes", "base", "target branch"),
                ("propose merging my branch into main", "send my changes for review as a PR")),
    CatalogTool("github", "search_code", "Search for code across GitHub repositories.",
                _p("q", "search query", "per_page", "results per page"),
                ("find where a function is defined across public repos", "look for code snippets on GitHub")),
    CatalogTool("github", "get_pull_request_files", "Get the list of files changed in a pull request.",
                _p("owner", "owner", "repo", "repository", "pull_number", "PR number"),
                ("which files does PR 42 touch", "changed paths of a pull request")),
    CatalogTool("github", "merge_pull_request", "Merge a pull request.",
                _p("owner", "owner", "repo", "repository", "pull_number", "PR number", "merge_method", "merge, squash or rebase"),
                ("squash and land PR 17", "accept the pull request into the base branch")),
    CatalogTool("github", "fork_repository", "Fork a GitHub repository to your account or an organization.",
                _p("owner", "owner", "repo", "repository", "organization", "target org"),
                ("make my own copy of someone's repo on GitHub", "clone the project under my account on the website")),
    CatalogTool("slack", "post_message", "Post a new message to a Slack channel.",
                _p("channel_id", "channel", "text", "message text"),
                ("tell the team in #general that the deploy is done", "send a chat note to a channel")),
    CatalogTool("slack", "reply_to_thread", "Reply to a specific message thread in Slack.",
                _p("channel_id", "channel", "thread_ts", "parent message timestamp", "text", "reply"),
                ("answer inside an existing conversation thread", "respond under someone's chat message")),
    CatalogTool("slack", "add_reaction", "Add a reaction emoji to a message.",
                _p("channel_id", "channel", "timestamp", "message", "reaction", "emoji name"),
                ("put a thumbs up on that message", "react with an emoji")),
    CatalogTool("slack", "get_users", "Get a list of all users in the workspace with their basic profile information.",
                _p("limit", "maximum users", "cursor", "pagination cursor"),
                ("who is in our chat workspace", "list the members with their profiles")),
    CatalogTool("sentry", "get_issue_details", "Retrieve an error issue from Sentry with its stack trace and latest event.",
                _p("issue_id", "the Sentry issue id or URL"),
                ("show me the stack trace of that production exception", "details of a crash report from error monitoring")),
    CatalogTool("linear", "update_issue", "Update an existing Linear issue: status, assignee, priority or title.",
                _p("id", "issue id", "status", "workflow state", "assignee", "user", "priority", "0-4"),
                ("move LIN-123 to done and assign it to me", "change the priority of a task in our tracker")),
    CatalogTool("notion", "create_page", "Create a new page in a Notion database or as a child of a page.",
                _p("parent_id", "database or page", "title", "page title", "content", "markdown body"),
                ("write meeting notes into our wiki", "add a document to the team workspace")),
    CatalogTool("notion", "query_database", "Query a Notion database with filters and sorts.",
                _p("database_id", "database", "filter", "filter object", "sorts", "sort order"),
                ("rows of the roadmap table where status is blocked", "filter entries of a wiki table")),
    CatalogTool("postgres", "query", "Run a read-only SQL query against the PostgreSQL database.",
                _p("sql", "the SQL statement"),
                ("how many users signed up last week in the database", "select rows from the orders table")),
    CatalogTool("sqlite", "list_tables", "List all tables in the SQLite database.",
                _p(),
                ("what tables does the local db have", "show the schema's table names")),
    CatalogTool("sqlite", "describe_table", "Get the schema information for a specific table.",
                _p("table_name", "table"),
                ("what columns does the users table have", "column types of a table")),
    CatalogTool("brave", "web_search", "Search the web with the Brave Search API; returns titles, URLs and snippets.",
                _p("query", "search terms", "count", "results", "offset", "pagination"),
                ("look this up on the internet", "find recent articles online about rust async")),
    CatalogTool("brave", "local_search", "Search for local businesses and places near a location.",
                _p("query", "what to find", "count", "results"),
                ("pizza restaurants near me", "find a pharmacy close to the office")),
    CatalogTool("puppeteer", "navigate", "Navigate the browser to a URL.",
                _p("url", "address"),
                ("open the login page in the headless browser", "point the browser at a website")),
    CatalogTool("puppeteer", "screenshot", "Take a screenshot of the current page or an element.",
                _p("name", "name for the image", "selector", "CSS selector", "width", "px", "height", "px"),
                ("capture an image of what the page looks like", "grab a picture of the rendered site")),
    CatalogTool("puppeteer", "click", "Click an element on the page.",
                _p("selector", "CSS selector"),
                ("press the submit button", "tap the link labelled next")),
    CatalogTool("puppeteer", "fill", "Fill out an input field.",
                _p("selector", "CSS selector", "value", "text to type"),
                ("type my email into the form", "enter text in the search box")),
    CatalogTool("kubernetes", "get_pods", "List pods in a namespace with their status.",
                _p("namespace", "namespace", "label_selector", "labels"),
                ("which containers are running in staging", "status of the workloads in the cluster")),
    CatalogTool("kubernetes", "get_logs", "Fetch the logs of a pod or one of its containers.",
                _p("name", "pod", "namespace", "namespace", "container", "container", "tail_lines", "lines"),
                ("why is the api pod crashing, show its output", "container output of a deployment")),
    CatalogTool("kubernetes", "scale_deployment", "Scale a deployment to a number of replicas.",
                _p("name", "deployment", "namespace", "namespace", "replicas", "count"),
                ("run five copies of the web service", "increase the instance count of a service")),
    CatalogTool("stripe", "create_refund", "Refund a charge or payment intent, fully or partially.",
                _p("payment_intent", "payment", "amount", "cents to refund", "reason", "why"),
                ("give the customer their money back for order 991", "reverse a card payment")),
    CatalogTool("stripe", "list_invoices", "List invoices, optionally for one customer.",
                _p("customer", "customer id", "status", "draft, open, paid", "limit", "how many"),
                ("unpaid bills of customer cus_123", "show billing documents sent this month")),
    CatalogTool("gdrive", "search_files", "Search for files in Google Drive by name or content.",
                _p("query", "search text", "page_size", "results"),
                ("find the quarterly budget spreadsheet in my drive", "locate a shared document in cloud storage")),
    CatalogTool("gcalendar", "create_event", "Create a calendar event with attendees and a time range.",
                _p("summary", "title", "start", "start time", "end", "end time", "attendees", "emails"),
                ("schedule a meeting with Bob tomorrow at 3", "book a slot on my calendar")),
    CatalogTool("gcalendar", "list_events", "List upcoming events of a calendar in a time range.",
                _p("time_min", "from", "time_max", "to", "calendar_id", "calendar"),
                ("what is on my agenda this week", "am I free on friday afternoon")),
    CatalogTool("jira", "transition_issue", "Move a Jira issue to another workflow status.",
                _p("issue_key", "e.g. PROJ-12", "transition", "target status"),
                ("mark PROJ-12 as in progress", "advance a ticket through the workflow")),
    CatalogTool("jira", "add_comment", "Add a comment to a Jira issue.",
                _p("issue_key", "issue", "body", "comment text"),
                ("leave a note on ticket PROJ-7", "write a remark on an issue in the tracker")),
    CatalogTool("everything", "get_tiny_image", "Returns a tiny test image.",
                _p(),
                ("give me a small sample picture", "a test png")),
    CatalogTool("everything", "long_running_operation", "Demonstrates a long running operation with progress updates.",
                _p("duration", "seconds", "steps", "progress steps"),
                ("simulate a slow task that reports progress", "a job that takes a while and shows progress")),
)

_RESOURCES = {
    "crm": ("contact", "deal", "company", "lead", "note"),
    "helpdesk": ("ticket", "macro", "agent", "satisfaction_rating", "view"),
    "cms": ("post", "page_draft", "media_asset", "tag", "author"),
    "analytics": ("dashboard", "report", "metric", "funnel", "segment"),
    "storage": ("bucket", "object", "lifecycle_rule", "access_key", "upload"),
    "ci": ("pipeline", "job", "artifact", "runner", "schedule"),
    "hr": ("employee", "time_off_request", "payslip", "position", "review"),
    "shop": ("product", "order", "cart", "coupon", "shipment"),
    "monitoring": ("alert", "incident", "monitor", "on_call_shift", "status_page"),
    "mail": ("email", "draft", "label", "filter", "contact_group"),
    "docs": ("document", "comment_thread", "revision", "template", "folder"),
    "dns": ("zone", "record", "certificate", "firewall_rule", "redirect"),
}
_VERBS = (
    ("create", "Create a new {r} in {s}.", ("name", "display name of the new {r}"), ("attributes", "fields to set")),
    ("get", "Get one {r} from {s} by id, with all its fields.", ("id", "the {r} id"),),
    ("list", "List {r}s in {s}, newest first, with paging.", ("limit", "how many {r}s"), ("cursor", "page cursor"),
     ("filter", "field filter")),
    ("update", "Update fields of an existing {r} in {s}.", ("id", "the {r} id"), ("attributes", "fields to change")),
    ("delete", "Delete a {r} from {s}. This cannot be undone.", ("id", "the {r} id"), ("confirm", "must be true")),
    ("search", "Full-text search over {r}s in {s}.", ("query", "words to find"), ("limit", "results")),
    ("export", "Export {r}s from {s} as CSV or JSON.", ("format", "csv or json"), ("since", "only newer than this")),
    ("archive", "Archive a {r} in {s} so it no longer shows in lists.", ("id", "the {r} id")),
)


def generated() -> list[CatalogTool]:
    """Verb × resource tools of the SaaS-like servers (deterministic order)."""
    out: list[CatalogTool] = []
    for (server, resources), verb in itertools.product(_RESOURCES.items(), _VERBS):
        for resource in resources:
            name, template, *params = verb
            label = resource.replace("_", " ")
            described = tuple((p, d.format(r=label)) for p, d in params)
            out.append(CatalogTool(server, f"{name}_{resource}", template.format(r=label, s=server), described))
    return out


def catalog(n: int) -> list[CatalogTool]:
    """``n`` tools: every seed first (when n allows), then generated ones, interleaved by server."""
    pool = [*SEEDS, *generated()]
    if n > len(pool):
        raise ValueError(f"the catalog has {len(pool)} tools; asked for {n}")
    return pool[:n]


def queries() -> list[tuple[str, str]]:
    """(query, expected full tool name) for every seed."""
    return [(q, t.full_name) for t in SEEDS for q in t.queries]


# Written after the first run of the benchmark, *before* the search's synonym lexicon
# (context/toolset/lexicon.py) was made, and never used to tune it: the held-out set. One per seed,
# phrased as a model might ask when it has not read the tool's description.
HELD_OUT: dict[str, str] = {
    "filesystem__read_text_file": "print the contents of README",
    "filesystem__write_file": "put this generated code into a new source file",
    "filesystem__directory_tree": "overview of the project layout, all subfolders",
    "filesystem__move_file": "change the name of a file",
    "git__git_status": "what did I modify in the working copy",
    "git__git_diff_staged": "review what I have staged",
    "git__git_log": "list the last ten commits",
    "git__git_create_branch": "branch off for a bugfix",
    "time__get_current_time": "current local time in Sydney",
    "time__convert_time": "5pm London time in Los Angeles time",
    "fetch__fetch": "read the article at https://example.com/post",
    "memory__create_entities": "store facts about a new person in memory",
    "memory__search_nodes": "recall what the knowledge graph knows about the billing project",
    "github__create_issue": "report a problem to the maintainers on GitHub",
    "github__create_pull_request": "open a PR from feature-x to main",
    "github__search_code": "grep all of GitHub for uses of this API",
    "github__get_pull_request_files": "list the diffs' files in a pull request",
    "github__merge_pull_request": "merge PR 99 now that it is approved",
    "github__fork_repository": "fork the upstream repo",
    "slack__post_message": "announce the release in the slack channel",
    "slack__reply_to_thread": "respond in the thread about the outage",
    "slack__add_reaction": "add an eyes emoji to the message",
    "slack__get_users": "slack member directory",
    "sentry__get_issue_details": "inspect the error event that Sentry captured",
    "linear__update_issue": "set the status of the Linear task to in review",
    "notion__create_page": "new Notion page for the design doc",
    "notion__query_database": "list items in the Notion database filtered by owner",
    "postgres__query": "run SQL to count orders per day",
    "sqlite__list_tables": "which tables exist in the sqlite file",
    "sqlite__describe_table": "schema of the accounts table",
    "brave__web_search": "search online for the latest python release notes",
    "brave__local_search": "coffee shops nearby",
    "puppeteer__navigate": "go to the checkout page in the browser",
    "puppeteer__screenshot": "take a screenshot of the dashboard",
    "puppeteer__click": "click the accept cookies button",
    "puppeteer__fill": "fill in the password field",
    "kubernetes__get_pods": "list the pods in namespace prod",
    "kubernetes__get_logs": "tail the logs of the worker pod",
    "kubernetes__scale_deployment": "scale the api deployment down to zero",
    "stripe__create_refund": "refund this charge",
    "stripe__list_invoices": "invoices for a customer",
    "gdrive__search_files": "look in Google Drive for the onboarding slides",
    "gcalendar__create_event": "put a one-on-one on the calendar for Monday",
    "gcalendar__list_events": "meetings on my calendar tomorrow",
    "jira__transition_issue": "close the Jira issue",
    "jira__add_comment": "comment on the Jira ticket with the fix",
    "everything__get_tiny_image": "return a tiny image for testing",
    "everything__long_running_operation": "run the long operation demo with progress",
}


def held_out() -> list[tuple[str, str]]:
    """(query, expected full tool name) of the held-out set."""
    return [(q, f"mcp__{key}") for key, q in HELD_OUT.items()]
