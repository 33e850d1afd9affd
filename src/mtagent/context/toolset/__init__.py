"""The tool catalog as context: schemas (full or compact), deferral behind ``tool_search``, skills.

Tool definitions fill the window on every call like history does (DESIGN principle 10). This
package decides which definitions are sent in full, which are only listed by name, how a listed
one is found and loaded, and what that costs — for built-in tools, MCP tools and Agent Skills alike:

* :mod:`.schemas` — full or compact OpenAI schemas and their tokens;
* :mod:`.catalog` — :class:`ToolCatalog`: every tool with its source and state, deferral, loads;
* :mod:`.search` / :mod:`.bm25` — ``tool_search``: BM25 (hybrid with embeddings);
* :mod:`.cost` — the prompt-cache price of a load;
* :mod:`.skills` / :mod:`.frontmatter` — Agent Skills, read under :mod:`mtagent.confine`;
* :mod:`.listing` — :class:`ToolsetContext`: the listings and deltas the model reads;
* :mod:`.toolset` — :class:`Toolset`: all of it for one session (what an opener builds).
"""

from mtagent.context.toolset.catalog import TOOL_SEARCH, Deferral, LoadReport, ToolCatalog, ToolTokens
from mtagent.context.toolset.entries import ToolEntry, entry_for
from mtagent.context.toolset.listing import ToolsetContext
from mtagent.context.toolset.search import SearchHit, ToolSearchIndex
from mtagent.context.toolset.skills import Skill, SkillBook, discover
from mtagent.context.toolset.toolset import Toolset, skill_schema

__all__ = ["TOOL_SEARCH", "Deferral", "LoadReport", "SearchHit", "Skill", "SkillBook", "ToolCatalog",
           "ToolEntry", "ToolSearchIndex", "ToolTokens", "Toolset", "ToolsetContext", "discover", "entry_for",
           "skill_schema"]
