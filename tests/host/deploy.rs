//! The deploy recipe: the committed runtime config puts both stores on
//! Redis, and `cairn deploy spinkube` writes one SpinApp per tool plus the
//! front app, each with its own autoscaler, naming every component of
//! `spin.toml` exactly once and wiring the router to every tool's Service.
use crate::harness::{root, scratch};
use cairn::cmd::deploy::{Args, Autoscaler, spinkube, yaml};
use cairn::manifest::Manifest;
use cairn::stores::{StoreConfig, Stores};
use serde_json::{Value, json};

fn args(autoscaler: Autoscaler) -> Args {
    Args {
        manifest: root().join("spin.toml"),
        image: "ghcr.io/example/cairn:0.1.0".into(),
        namespace: "notes".into(),
        autoscaler,
        secret: "cairn".into(),
        out: scratch("spinkube"),
    }
}

#[test]
fn the_committed_runtime_config_puts_both_stores_on_redis() {
    let s = Stores::from_file(&root().join("deploy/runtime-config.redis.toml")).unwrap();
    for label in ["default", "cache"] {
        assert!(matches!(s.labels.get(label), Some(StoreConfig::Redis { .. })), "{label}: {:?}", s.labels.get(label));
    }
}

#[test]
fn the_spinkube_manifests_name_every_component_once_each_with_an_autoscaler() {
    let manifest = Manifest::load(&root().join("spin.toml")).unwrap();
    for scaler in [Autoscaler::Hpa, Autoscaler::Keda] {
        let files = spinkube(&manifest, &args(scaler)).unwrap();
        let docs: Vec<&Value> = files.iter().flat_map(|(_, d)| d).collect();
        let apps: Vec<&Value> = docs.iter().copied().filter(|d| d["kind"] == "SpinApp").collect();
        let mut named: Vec<String> =
            apps.iter().flat_map(|a| a["spec"]["components"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string())).collect();
        named.sort();
        let mut all: Vec<String> = manifest.components.iter().map(|c| c.id.clone()).collect();
        all.sort();
        assert_eq!(named, all, "every component of spin.toml exactly once");
        let scaler_kind = if scaler == Autoscaler::Hpa { "HorizontalPodAutoscaler" } else { "ScaledObject" };
        for a in &apps {
            let name = a["metadata"]["name"].as_str().unwrap();
            assert_eq!(a["spec"]["enableAutoscaling"], true, "{name}");
            let scaled = docs.iter().filter(|d| d["kind"] == scaler_kind && d["metadata"]["name"] == name).count();
            assert_eq!(scaled, 1, "{name} needs exactly one {scaler_kind}");
        }
        let tools = cairn_notes::tools::TOOLS;
        assert_eq!(apps.len(), tools.len() + 1, "one app per tool plus the front");
        let front = apps.iter().find(|a| a["metadata"]["name"] == "cairn-front").unwrap();
        for t in tools {
            let var = json!({"name": format!("tool_url_{}", t.name), "value": format!("http://cairn-{}.notes.svc.cluster.local", t.component())});
            assert!(front["spec"]["variables"].as_array().unwrap().contains(&var), "the router is not wired to {}", t.name);
        }
        let kustomization = docs.iter().find(|d| d["kind"] == "Kustomization").unwrap();
        assert_eq!(kustomization["resources"].as_array().unwrap().len(), apps.len());
    }
}

#[test]
fn yaml_is_written_as_blocks_with_quoted_strings() {
    let v = json!({"a": {"b": [1, "x", {"c": true, "d": []}]}, "e": "y: z"});
    assert_eq!(yaml(&v), "a:\n  b:\n  - 1\n  - \"x\"\n  - c: true\n    d: []\ne: \"y: z\"\n");
}
