//! Component dependencies (`[component.<id>.dependencies]`, Spin ≥ 3.5),
//! composed at load time with Spin's rules: the dependent's import named in
//! the manifest is filled by the dependency's export (`export`, default the
//! import's own name), whose type must match; `inherit_configuration` gives
//! the dependency the dependent's stores, variables and outbound hosts, and
//! without it the dependency gets none.
//!
//! How this host does it: every function of a filled import becomes a host
//! function of the dependent's linker that forwards its arguments to the
//! dependency's export, in the dependent's own store. The dependency is
//! instantiated the first time the dependent calls it and reused for the
//! rest of that instance's life, which is what the guest sees of Spin's
//! composition (one dependency instance per dependent instance). The first
//! one made uses the slot its dependent took for it; each further one takes
//! its own then ([`crate::instance::instance_permits`], held until the
//! dependent's store is dropped, waiting at most
//! [`crate::instance::DEPENDENCY_WAIT`]), so a router that calls one tool
//! holds two slots, not one for every tool it could call, and never waits
//! while holding a slot to serve its first tool.
//!
//! Invariant: a dependency instance never outlives, and is never shared
//! beyond, the dependent instance it was made for (it lives in that
//! instance's store), so a composed tool has the same per-request isolation
//! as the component that composed it.

use crate::instance::Ctx;
use crate::manifest::{Component as Spec, Dependency};
use anyhow::{Context, Result, bail};
use std::sync::Arc;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, ComponentExportIndex, InstancePre, Linker, Val};
use wasmtime::{Engine, StoreContextMut};

/// A dependency ready to instantiate inside a dependent's store.
pub struct Linked {
    /// Which slot of [`Ctx`]'s dependency instances it uses.
    slot: usize,
    /// What the manifest says of it.
    dep: Dependency,
    /// Pre-linked with the host's imports.
    pre: InstancePre<Ctx>,
    /// The configuration it runs with when it does not inherit the
    /// dependent's: no stores, no variables, no outbound hosts.
    bare: Arc<Spec>,
}

/// Fill the imports of `spec`'s component that its manifest entry names
/// with its dependencies, in `linker` (the dependent's own copy of the
/// host's linker). `compile` turns a `.wasm` path into a compiled component.
pub fn link(
    engine: &Engine,
    host: &Linker<Ctx>,
    linker: &mut Linker<Ctx>,
    spec: &Spec,
    dependent: &Component,
    compile: &mut dyn FnMut(&std::path::Path) -> Result<Component>,
) -> Result<()> {
    let ty = dependent.component_type();
    for (slot, dep) in spec.dependencies.iter().enumerate() {
        let what = || format!("component {:?}: dependency {:?}", spec.id, dep.import);
        let Some(ComponentItem::ComponentInstance(import)) = ty.get_import(engine, &dep.import).map(|e| e.ty) else {
            let imports: Vec<&str> = ty.imports(engine).map(|(n, _)| n).filter(|n| !n.starts_with("wasi:")).collect();
            bail!("{}: the component imports no instance named {:?} (its other imports: {})", what(), dep.import, imports.join(", "));
        };
        let component = compile(&dep.source).with_context(what)?;
        let Some(export) = component.get_export_index(None, &dep.export) else {
            let exports: Vec<String> = component.component_type().exports(engine).map(|(n, _)| n.to_string()).collect();
            bail!("{}: {} exports no {:?} (it exports {})", what(), dep.source.display(), dep.export, exports.join(", "));
        };
        let pre = host
            .instantiate_pre(&component)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("{}: {} imports something this host does not provide", what(), dep.source.display()))?;
        let bare = Arc::new(Spec { key_value_stores: Vec::new(), allowed_outbound_hosts: Vec::new(), variables: Default::default(), ..spec.clone() });
        let linked = Arc::new(Linked { slot, dep: dep.clone(), pre, bare });
        let mut instance = linker.instance(&dep.import)?;
        for (name, item) in import.exports(engine) {
            // Types (the slot's records and variants) need no definition.
            if matches!(item.ty, ComponentItem::Type(_)) {
                continue;
            }
            if !matches!(item.ty, ComponentItem::ComponentFunc(_)) {
                bail!("{}: import {:?} holds {name:?}, which is neither a function nor a type; only functions are composed here", what(), dep.import);
            }
            let func =
                component.get_export_index(Some(&export), name).with_context(|| format!("{}: the export {:?} has no function {name:?}", what(), dep.export))?;
            let linked = linked.clone();
            instance.func_new_async(name, move |store, _ty, params, results| {
                let linked = linked.clone();
                Box::new(async move { forward(store, &linked, func, params, results).await })
            })?;
        }
    }
    Ok(())
}

/// One call of a filled import: into the dependency's export, instantiated
/// in this store on first use, with the configuration it is given.
async fn forward(
    mut store: StoreContextMut<'_, Ctx>,
    linked: &Linked,
    func: ComponentExportIndex,
    params: &[Val],
    results: &mut [Val],
) -> wasmtime::Result<()> {
    let existing = store.data().deps.slots.get(linked.slot).copied().flatten();
    let instance = match existing {
        Some(i) => i,
        None => {
            let permit = if std::mem::take(&mut store.data_mut().deps.spare) {
                None
            } else {
                let app = store.data().app.clone();
                let wait = crate::instance::DEPENDENCY_WAIT.min(app.limits.request_timeout);
                match crate::instance::instance_permits(&app, 1, wait).await {
                    Ok(p) => Some(p),
                    Err(o) => return Err(store.data().in_flight.refuse(o).into()),
                }
            };
            let i = linked.pre.instantiate_async(&mut store).await.map_err(|e| e.context(format!("cannot instantiate dependency {:?}", linked.dep.import)))?;
            let deps = &mut store.data_mut().deps;
            if deps.slots.len() <= linked.slot {
                deps.slots.resize(linked.slot + 1, None);
            }
            deps.slots[linked.slot] = Some(i);
            deps.permits.extend(permit);
            i
        }
    };
    let f = instance.get_func(&mut store, func).ok_or_else(|| wasmtime::Error::msg(format!("dependency {:?} lost its export", linked.dep.import)))?;
    // A dependency that does not inherit runs with no configuration of its
    // own; the dependent's is put back however the call ends.
    tracing::debug!(dependency = %linked.dep.import, "composed call");
    let saved = (!linked.dep.inherit).then(|| store.data_mut().enter(linked.bare.clone()));
    let outcome = f.call_async(&mut store, params, results).await;
    if let Some(saved) = saved {
        store.data_mut().leave(saved);
    }
    if outcome.is_ok() {
        store.data().app.answers.composed(&linked.dep.import, &linked.dep.export, results);
    }
    outcome
}
