//! `cairn deploy spinkube`: the Kubernetes manifests that run the
//! application on SpinKube with every tool scaled on its own: one `SpinApp`
//! per tool component, one `cairn-front` `SpinApp` for everything else (the
//! router, the REST API, health, the probe), each with its own autoscaler
//! (a `HorizontalPodAutoscaler`, or a KEDA `ScaledObject`), all on the Redis
//! named by a Secret, and the router wired to each tool's Service through
//! the `tool_url_<tool>` variables.
//!
//! Local service chaining does not cross `SpinApp`s, which is why the router
//! reaches tools by Service URL; every tool component is routed at
//! `/tools/<tool>` for that. The store runs as Spin's own Redis backend,
//! which can report a lost swap as written: `commit_check` keeps its manifest
//! default (`on`) so every component confirms its commits.

use crate::manifest::Manifest;
use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The autoscaler each `SpinApp` gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Autoscaler {
    /// A `HorizontalPodAutoscaler` on CPU.
    Hpa,
    /// A KEDA `ScaledObject` on CPU.
    Keda,
}

/// Arguments of `cairn deploy spinkube`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The application manifest.
    #[arg(long, short = 'f', default_value = "spin.toml")]
    pub manifest: PathBuf,
    /// The OCI reference the application was pushed to (`spin registry push`).
    #[arg(long)]
    pub image: String,
    /// The namespace the apps run in (it is part of every Service URL).
    #[arg(long, default_value = "cairn")]
    pub namespace: String,
    /// Which autoscaler to generate.
    #[arg(long, value_enum, default_value = "hpa")]
    pub autoscaler: Autoscaler,
    /// The Secret holding `redis-url` (the store) and `jwks`, `issuer`,
    /// `audience`, `identity-secret` (the router's and the tools' variables).
    #[arg(long, default_value = "cairn")]
    pub secret: String,
    /// Where to write the manifests.
    #[arg(long, default_value = "deploy/spinkube")]
    pub out: PathBuf,
}

/// Write the manifests; print what was written.
pub fn run(a: Args) -> Result<()> {
    let manifest = Manifest::load(&a.manifest)?;
    let files = spinkube(&manifest, &a)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    for (name, docs) in &files {
        let path = a.out.join(name);
        let text: Vec<String> = docs.iter().map(yaml).collect();
        std::fs::write(&path, text.join("---\n")).with_context(|| format!("cannot write {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}

/// The `SpinApp` name of a component group.
fn app_name(id: &str) -> String {
    format!("cairn-{id}")
}

/// Every file with its documents: one per tool app, the front app, and a
/// `kustomization.yaml` listing them.
pub fn spinkube(manifest: &Manifest, a: &Args) -> Result<Vec<(String, Vec<Value>)>> {
    let tools: Vec<(&str, String)> = cairn_notes::tools::TOOLS.iter().map(|t| (t.name, t.component())).collect();
    let is_tool = |id: &str| tools.iter().any(|(_, c)| c == id);
    let front: Vec<String> = manifest.components.iter().map(|c| c.id.clone()).filter(|id| !is_tool(id)).collect();
    let secret = |key: &str| json!({"secretKeyRef": {"name": a.secret, "key": key}});
    let stores: Vec<Value> = ["default", "cache"]
        .iter()
        .map(|label| {
            json!({"name": label, "type": "redis",
                "options": [{"name": "url", "valueFrom": {"secretKeyRef": {"name": a.secret, "key": "redis-url"}}}]})
        })
        .collect();
    let runtime = json!({ "keyValueStores": stores });
    let mut files = Vec::new();
    let mut front_vars: Vec<Value> =
        ["jwks", "issuer", "audience", "identity_secret"].iter().map(|v| json!({"name": v, "valueFrom": secret(&v.replace('_', "-"))})).collect();
    for (tool, component) in &tools {
        if manifest.component(component).is_none() {
            continue;
        }
        let url = format!("http://{}.{}.svc.cluster.local", app_name(component), a.namespace);
        front_vars.push(json!({"name": format!("tool_url_{tool}"), "value": url}));
        let vars = vec![json!({"name": "identity_secret", "valueFrom": secret("identity-secret")})];
        files.push((format!("{}.yaml", app_name(component)), app(a, &app_name(component), std::slice::from_ref(component), vars, &runtime)));
    }
    files.insert(0, (format!("{}.yaml", app_name("front")), app(a, &app_name("front"), &front, front_vars, &runtime)));
    let resources: Vec<Value> = files.iter().map(|(f, _)| json!(f)).collect();
    files.push((
        "kustomization.yaml".into(),
        vec![json!({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": a.namespace, "resources": resources})],
    ));
    Ok(files)
}

/// One `SpinApp` and its autoscaler.
fn app(a: &Args, name: &str, components: &[String], variables: Vec<Value>, runtime: &Value) -> Vec<Value> {
    let spin_app = json!({
        "apiVersion": "core.spinkube.dev/v1alpha1",
        "kind": "SpinApp",
        "metadata": {"name": name, "namespace": a.namespace, "labels": {"app.kubernetes.io/part-of": "cairn"}},
        "spec": {
            "image": a.image,
            "executor": "containerd-shim-spin",
            "enableAutoscaling": true,
            "components": components,
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
            "runtimeConfig": runtime,
            "variables": variables,
        },
    });
    let scaler = match a.autoscaler {
        Autoscaler::Hpa => json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": a.namespace},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "minReplicas": 1,
                "maxReplicas": 10,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}],
            },
        }),
        Autoscaler::Keda => json!({
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": {"name": name, "namespace": a.namespace},
            "spec": {
                "scaleTargetRef": {"name": name},
                "minReplicaCount": 1,
                "maxReplicaCount": 10,
                "triggers": [{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "60"}}],
            },
        }),
    };
    vec![spin_app, scaler]
}

/// A JSON value as block YAML (strings double-quoted, as JSON writes them).
pub fn yaml(v: &Value) -> String {
    let mut out = String::new();
    write_yaml(v, 0, &mut out);
    out
}

fn write_yaml(v: &Value, indent: usize, out: &mut String) {
    let pad = "  ".repeat(indent);
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                match x {
                    Value::Object(o) if !o.is_empty() => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        write_yaml(x, indent + 1, out);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        write_yaml(x, indent, out);
                    }
                    _ => out.push_str(&format!("{pad}{k}: {}\n", scalar(x))),
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for x in a {
                let mut item = String::new();
                write_yaml(x, indent + 1, &mut item);
                let item = if matches!(x, Value::Object(o) if !o.is_empty()) || matches!(x, Value::Array(a) if !a.is_empty()) {
                    item
                } else {
                    format!("{}{}\n", "  ".repeat(indent + 1), scalar(x))
                };
                // The first line of the item sits after the dash.
                let body = item.trim_start_matches(' ');
                out.push_str(&format!("{pad}- {body}"));
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other))),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => other.to_string(),
    }
}
