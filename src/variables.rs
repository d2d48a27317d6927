//! Application variables, resolved once at startup the way Spin does:
//! `SPIN_VARIABLE_<NAME>` from the environment, else the manifest default;
//! a required variable with neither stops startup with its name.

use crate::manifest::{Component, Manifest, expand};
use anyhow::{Result, bail};
use std::collections::BTreeMap;

/// Resolve every application variable.
pub fn resolve_app(manifest: &Manifest) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (name, var) in &manifest.variables {
        let env = format!("SPIN_VARIABLE_{}", name.to_ascii_uppercase());
        let value = match std::env::var(&env) {
            Ok(v) => v,
            Err(_) => match (&var.default, var.required) {
                (Some(d), _) => d.clone(),
                (None, true) => bail!("variable {name:?} is required: set {env}"),
                (None, false) => String::new(),
            },
        };
        out.insert(name.clone(), value);
    }
    Ok(out)
}

/// Expand a component's variable templates (`"{{ app_var }}"`, text around
/// templates kept) against the application's values.
pub fn resolve_component(c: &Component, app: &BTreeMap<String, String>) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (name, template) in &c.variables {
        let value = expand(template, app).map_err(|e| anyhow::anyhow!("component {:?}: variable {name:?}: {e}", c.id))?;
        out.insert(name.clone(), value);
    }
    Ok(out)
}
