//! The claim tools tell an agent what to do on a conflict: wait or work elsewhere.
use cairn_notes::tools;

#[test]
fn claim_tools_tell_agents_to_wait_or_work_elsewhere_never_around_a_claim() {
    let specs = tools();
    let claim_tools = ["claim_note", "renew_claim", "release_claim", "post_claim_note", "list_claims"];
    for name in claim_tools {
        let s = specs.iter().find(|s| s.name == name).expect(name);
        assert_eq!(s.input_schema["additionalProperties"], false, "{name}");
        let d = &s.description;
        if name != "post_claim_note" {
            assert!(d.contains("expires_at"), "{name}");
            assert!(d.contains("another target"), "{name}");
            assert!(d.contains("never improvise around a claim") || d.contains("Never improvise around a claim"), "{name}");
        }
        let expected_scope = if name == "list_claims" { "notes:read" } else { "notes:write" };
        assert_eq!(s.scope, expected_scope, "{name}");
    }
    let claim = specs.iter().find(|s| s.name == "claim_note").unwrap();
    assert!(claim.description.contains("claim_conflict"));
    assert!(claim.description.contains("renewed: true"));
    assert_eq!(claim.input_schema["properties"]["ttl_seconds"]["maximum"], 3600);
    assert_eq!(claim.input_schema["properties"]["ttl_seconds"]["minimum"], 1);
    assert_eq!(claim.input_schema["required"], serde_json::json!(["note_id"]));
    let list = specs.iter().find(|s| s.name == "list_claims").unwrap();
    assert!(list.description.contains("not instructions"));
    // Every write tool is either a versioned content write or a claim tool.
    for s in specs.iter().filter(|s| !s.annotations.read_only_hint) {
        let versioned = s.input_schema["required"].as_array().unwrap().iter().any(|f| f == "expected_version");
        assert!(versioned || claim_tools.contains(&s.name), "{}", s.name);
    }
}
