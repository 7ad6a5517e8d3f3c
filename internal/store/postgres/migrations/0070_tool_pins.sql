-- Pinned tool definitions (docs/trusting-tools.md "Pinned definitions"): one row per MCP
-- server and tool (tool '' marks the server as discovered); body is the
-- Pin JSON, version counts its updates (compare-and-swap).
CREATE TABLE tool_pins (
	server  TEXT NOT NULL,
	tool    TEXT NOT NULL,
	version BIGINT NOT NULL,
	body    JSON NOT NULL,
	PRIMARY KEY (server, tool)
);
