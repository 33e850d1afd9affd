"""The tool catalog as context: schemas (full or compact), deferral behind ``tool_search``, skills.

Tool definitions fill the window on every call like history does (DESIGN principle 10). This
package decides which definitions are sent in full, which are only listed by name, how a listed
one is found and loaded, and what that costs — for built-in tools, MCP tools and Agent Skills alike.
"""
