//! `edit_note_tab`: one MCP tool, one component. The rules are in `cairn-notes`;
//! the wire is in `cairn_guest::tool`.
cairn_guest::tool_component!(edit_note_tab);
