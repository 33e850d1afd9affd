"""A tool result too big to copy: persisted from the text as it came, previewed from a redacted sample.

The engine redacts a result before budgeting it, and redaction makes a new string. For a 50 MB MCP
result with one secret in it that was the original, the redacted copy and, while ``re.sub`` built
it, its pieces: 350 MB peak RSS where the same result without a secret took 290 (#33). A result
this big is over its tool's limit anyway, so the model only ever sees a preview: here the artifact
store redacts the text a piece at a time as it writes it (:meth:`~mtagent.redaction.Redactor.pieces`
— the same bytes as the whole redacted at once), and the preview is made from a sample — the
redacted head and tail, about :data:`SAMPLE_CHARS` each, with the middle's line breaks between them
so line numbers hold. What a sample leaves out: error lines from the middle of a log that size, and
the JSON outline of a JSON result that size (parsing 50 MB of JSON would cost ten times that anyway).
"""

from __future__ import annotations

from langchain_core.messages import ToolMessage

from mtagent.context.tool_results.budgeter import ToolResultBudgeter, is_budgeted
from mtagent.redaction import Redactor

# A text result at least this long, over its tool's limit, takes this path: below it two copies are
# cheap, and it is above what a shell command's output is kept to (``shell.max_capture_bytes``, 16 MiB by
# default), so a shell log's preview keeps the error lines from its middle.
STREAM_MIN_CHARS = 20_000_000
SAMPLE_CHARS = 1 << 20


def persist_huge(budgeter: ToolResultBudgeter, redactor: Redactor, message: ToolMessage) -> ToolMessage:
    """``message`` persisted and previewed without a whole redacted copy when it is that big (see the
    module docstring), else ``message`` as it is. Only where the artifact store redacts with
    ``redactor`` itself: it is the one that redacts what is stored."""
    text = message.content
    store = budgeter.artifacts
    if (not isinstance(text, str) or len(text) < STREAM_MIN_CHARS or is_budgeted(message) or store is None
            or store.redactor != redactor or (message.name or "") in budgeter.policy.reducers):
        return message
    limit = budgeter.policy.limit_for(message.name)
    if limit is None or len(text) <= limit:
        return message
    return budgeter.persist_stream(message, redacted_sample(redactor, text, SAMPLE_CHARS))


def redacted_sample(redactor: Redactor, text: str, chars: int) -> str:
    """The redacted first and last pieces of ``text`` (about ``chars`` each), its middle as line breaks only."""
    cuts = redactor.cuts(text, chars)
    head_end, tail_start = cuts[1], cuts[-2]
    if head_end >= tail_start:
        return redactor.text(text)
    middle = "\n" * text.count("\n", head_end, tail_start)
    return redactor.text(text[:head_end]) + middle + redactor.text(text[tail_start:])
