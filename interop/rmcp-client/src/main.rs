//! Drives a running Cairn with the official Rust MCP SDK (`rmcp`) over
//! Streamable HTTP with a bearer token.
//!
//! usage: `cairn-rmcp-interop URL` with `CAIRN_TOKEN` and `CAIRN_NOTE` set.
//! Lists the tools (each with its output schema), reads the markdown tab,
//! writes it with the version read, writes again with the stale version and
//! expects a `version_conflict`, then lists and reads the note's resources.
//! Prints one JSON line with what it saw; exits non-zero on any surprise.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};

type Failure = Box<dyn std::error::Error>;

fn env(name: &str) -> Result<String, Failure> {
    std::env::var(name).map_err(|_| format!("{name} is not set").into())
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Failure> {
    let url = std::env::args().nth(1).ok_or("usage: cairn-rmcp-interop URL")?;
    let (token, note) = (env("CAIRN_TOKEN")?, env("CAIRN_NOTE")?);
    let transport = StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url).auth_header(token));
    let client = ().serve(transport).await?;
    let info = serde_json::to_value(client.peer_info().as_deref())?;
    let protocol = info["protocolVersion"].as_str().unwrap_or_default().to_string();

    let tools = client.list_all_tools().await?;
    let with_output_schema = tools.iter().filter(|t| t.output_schema.is_some()).count();
    let call = |name: &'static str, args: Value| {
        let client = &client;
        async move { client.call_tool(CallToolRequestParams::new(name).with_arguments(object(args))).await }
    };
    let read = serde_json::to_value(call("read_note_tab", json!({"note_id": note, "tab_id": "markdown"})).await?)?;
    let tab = &read["structuredContent"];
    let version = tab["version"].as_u64().ok_or("read_note_tab answered without a version")?;
    let text = format!("{}rust sdk\n", tab["text"].as_str().unwrap_or_default());
    let edit = |key: &'static str| {
        json!({"note_id": note, "tab_id": "markdown", "expected_version": version, "idempotency_key": key,
               "operation": "replace_text", "text": text})
    };
    let wrote = serde_json::to_value(call("edit_note_tab", edit("rmcp-1")).await?)?;
    if wrote["isError"] == true {
        return Err(format!("the first write was refused: {wrote}").into());
    }
    let stale = serde_json::to_value(call("edit_note_tab", edit("rmcp-2")).await?)?;
    if stale["isError"] != true {
        return Err(format!("the stale write was not refused: {stale}").into());
    }

    let resources = client.list_all_resources().await?;
    let note_uri = format!("cairn://notes/{note}");
    let listed = resources.iter().any(|r| r.uri == note_uri);
    let templates = serde_json::to_value(client.list_resource_templates(None).await?)?;
    let tab_uri = format!("{note_uri}/tabs/markdown");
    let contents = serde_json::to_value(client.read_resource(ReadResourceRequestParams::new(tab_uri)).await?)?;
    let markdown = contents["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["mimeType"] == "text/markdown")
        .and_then(|c| c["text"].as_str())
        .unwrap_or_default()
        .to_string();
    client.cancel().await?;
    println!(
        "{}",
        json!({
            "client": "rmcp",
            "protocol": protocol,
            "tools": tools.len(),
            "tools_with_output_schema": with_output_schema,
            "read_version": version,
            "conflict": stale["structuredContent"]["error"],
            "current_version": stale["structuredContent"]["current_version"],
            "note_listed_as_resource": listed,
            "templates": templates["resourceTemplates"].as_array().map_or(0, Vec::len),
            "resource_text": markdown,
            "written_text": text,
        })
    );
    Ok(())
}
