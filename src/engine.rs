//! The engine and the component cache: the pooling allocator with a little
//! memory kept warm and epoch interruption for timeouts; every component
//! precompiled once into the cache directory and loaded from there on every
//! later start (the log says which); one linker with everything a component
//! may import.

use crate::instance::{Ctx, Loaded};
use crate::manifest::Manifest;
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};
use wasmtime_wasi_http::handler::ProxyPre;

/// Bytes of an instance's linear memory kept mapped when its slot is freed
/// (the rest is given back to the kernel). Every later instance of that
/// slot pays a `memset` of what was ever dirtied within it: with 16 MiB,
/// once one big edit had used a slot, every small edit on it paid ~2 ms
/// (an edit at 1,000 notes: 3,054 µs against 1,528 µs with 1 MiB). A big
/// request pays page faults past it instead (docs/decisions/instance-memory.md).
pub const KEEP_RESIDENT: usize = 1 << 20;

/// Most linear memories, tables and core instances one component may use.
const MAX_MEMORIES: u32 = 4;
const MAX_TABLES: u32 = 8;
const MAX_CORE_INSTANCES: u32 = 16;

/// Build the engine: pooling allocator with a little resident memory kept
/// warm, epoch interruption for timeouts.
pub fn engine(limits: &crate::instance::Limits) -> Result<Engine> {
    let mut pool = wasmtime::PoolingAllocationConfig::default();
    let n = limits.max_instances;
    // Every instance slot can hold a component using all a component may:
    // the pool runs out of instance slots (and requests wait for a permit)
    // before it runs out of memories, tables or core instances.
    pool.total_component_instances(n)
        .total_core_instances(n * MAX_CORE_INSTANCES)
        .total_memories(n * MAX_MEMORIES)
        .total_tables(n * MAX_TABLES)
        .total_stacks(n)
        .max_memory_size(limits.max_memory)
        .max_memories_per_component(MAX_MEMORIES)
        .max_tables_per_component(MAX_TABLES)
        .max_core_instances_per_component(MAX_CORE_INSTANCES)
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .table_keep_resident(1 << 20)
        .decommit_batch_size(1)
        .pagemap_scan(wasmtime::Enabled::Auto);
    let mut config = wasmtime::Config::new();
    config
        .wasm_component_model(true)
        // WASI 0.3: the async component ABI (`wasi:http@0.3.0` services).
        .wasm_component_model_async(true)
        .epoch_interruption(true)
        .allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
    // `CAIRN_PROFILER=perfmap` writes /tmp/perf-<pid>.map, so `perf report`
    // names the components' functions (build them unstripped to get names).
    if std::env::var("CAIRN_PROFILER").as_deref() == Ok("perfmap") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    Engine::new(&config).map_err(anyhow::Error::from).context("cannot create the wasmtime engine")
}

/// Compile `wasm` once: load the cached artifact if there is one for these
/// bytes and this engine, else compile and cache. Returns whether it compiled.
pub fn load_component(engine: &Engine, id: &str, wasm_path: &Path, cache_dir: &Path) -> Result<(Component, bool)> {
    let bytes = std::fs::read(wasm_path).with_context(|| format!("component {id:?}: cannot read {} (run `cairn build` first)", wasm_path.display()))?;
    let mut engine_hash = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut engine_hash);
    let digest = Sha256::digest(&bytes);
    let name = format!("{id}-{}-{:016x}.cwasm", hex(&digest[..12]), engine_hash.finish());
    let path = cache_dir.join(name);
    if path.exists() {
        // SAFETY: the file was written by `precompile_component` of an engine
        // with the same compatibility hash, in a directory only this host writes.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(c) => return Ok((c, false)),
            Err(e) => tracing::warn!(component = id, error = %e, "cached artifact unusable; recompiling"),
        }
    }
    let compiled = engine.precompile_component(&bytes).map_err(anyhow::Error::from).with_context(|| format!("component {id:?}: compile failed"))?;
    std::fs::create_dir_all(cache_dir)?;
    let tmp = cache_dir.join(format!(".{id}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, &compiled)?;
    std::fs::rename(&tmp, &path)?;
    // Drop artifacts of older builds of this component.
    if let Ok(entries) = std::fs::read_dir(cache_dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(&format!("{id}-")) && e.path() != path && n.ends_with(".cwasm") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    // SAFETY: as above; just written by this engine.
    let c = unsafe { Component::deserialize_file(engine, &path) }?;
    Ok((c, true))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The linker every component is instantiated with.
pub fn linker(engine: &Engine) -> Result<Linker<Ctx>> {
    let mut linker = Linker::<Ctx>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi::p3::add_to_linker(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p3::add_to_linker(&mut linker)?;
    crate::bindings::Host_::add_to_linker::<_, wasmtime::component::HasSelf<Ctx>>(&mut linker, |c| c)?;
    Ok(linker)
}

/// The HTTP entry of a component: `wasi:http/handler@0.3.0` (a WASI 0.3
/// service, whose instances are reused), else `wasi:http/incoming-handler@0.2.x`.
fn proxy_pre(pre: wasmtime::component::InstancePre<Ctx>) -> Result<ProxyPre<Ctx>> {
    if let Ok(p3) = wasmtime_wasi_http::p3::bindings::ServicePre::new(pre.clone()) {
        return Ok(ProxyPre::P3(p3));
    }
    Ok(ProxyPre::P2(wasmtime_wasi_http::p2::bindings::ProxyPre::new(pre).map_err(anyhow::Error::from)?))
}

/// Load every component of the manifest, and compose each one's
/// dependencies into it ([`crate::compose`]). A `.wasm` used more than once
/// (a tool served on its own and composed into the router) is compiled
/// once. Logs whether each was compiled or came from the cache.
pub fn load_all(engine: &Engine, manifest: &Manifest, app_vars: &BTreeMap<String, String>, cache_dir: &Path) -> Result<BTreeMap<String, Arc<Loaded>>> {
    let host = linker(engine)?;
    let mut compiled: BTreeMap<std::path::PathBuf, Component> = BTreeMap::new();
    let mut compile = |id: &str, path: &Path| -> Result<Component> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(c) = compiled.get(&key) {
            return Ok(c.clone());
        }
        let started = Instant::now();
        let (component, fresh) = load_component(engine, id, path, cache_dir)?;
        let how = if fresh { "compiled" } else { "loaded from cache" };
        tracing::info!(component = id, ms = started.elapsed().as_millis() as u64, "component {how}");
        compiled.insert(key, component.clone());
        Ok(component)
    };
    let mut out = BTreeMap::new();
    for spec in &manifest.components {
        let component = compile(&spec.id, &spec.source)?;
        let pre = if spec.dependencies.is_empty() {
            host.instantiate_pre(&component)
        } else {
            let mut linker = host.clone();
            crate::compose::link(engine, &host, &mut linker, spec, &component, &mut |path| {
                let id = path.file_stem().map(|s| s.to_string_lossy().replace('_', "-")).unwrap_or_default();
                compile(&id, path)
            })?;
            linker.instantiate_pre(&component)
        }
        .map_err(anyhow::Error::from)
        .with_context(|| format!("component {:?} imports something this host does not provide (a dependency missing from spin.toml?)", spec.id))?;
        let pre =
            proxy_pre(pre).with_context(|| format!("component {:?} exports neither wasi:http/handler@0.3.0 nor wasi:http/incoming-handler@0.2.x", spec.id))?;
        let variables = crate::variables::resolve_component(spec, app_vars)?;
        out.insert(spec.id.clone(), Arc::new(Loaded { spec: Arc::new(spec.clone()), pre, variables: Arc::new(variables) }));
    }
    Ok(out)
}
