"""``vouch mcp``: Vouch as a Model Context Protocol server, so an agent (Claude Desktop, Claude
Code, Cursor, an in-house assistant) can look at a database, run read-only SQL and have its SQL
checked before it shows an answer. The agent is the model; Vouch is the checks outside it.

- :mod:`.tools`: the tools as plain functions over :mod:`vouchsql.api` (inputs and outputs as
  JSON schemas, errors as ``{"error": {"kind", "message"}}``); needs no MCP SDK.
- :mod:`.server`: the official ``mcp`` SDK's low-level server over stdio or streamable HTTP
  (the ``[mcp]`` extra), imported only when ``vouch mcp`` starts.
- :mod:`.cli`: registers ``vouch mcp`` (imports neither of the above).
"""
